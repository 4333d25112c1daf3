# Toolchain: Debian clang-22 (bookworm-security) targeting riscv64 (SpacemiT X60: RVV 1.0,
# VLEN 256), with the GCC 12 cross sysroot/libstdc++ of g++-riscv64-linux-gnu, linked by lld-22.
# Target binaries run through qemu-riscv64 (QEMU 7.2 user mode) as CMake's crosscompiling
# emulator, so ctest and gtest_discover_tests work unchanged.
#   cmake -S . -B build-rv -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv64-clang.cmake \
#         -DNBITS_IME_EMULATE=ON -DNBITS_BUILD_BENCH=OFF -DNBITS_BUILD_CLI=OFF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)

set(RISCV_CLANG_VERSION "22" CACHE STRING "clang-N to use (22 knows xsmtvdot and -mtune=spacemit-x60)")
set(RISCV_SYSROOT "/usr/riscv64-linux-gnu" CACHE PATH "target libc (Debian multiarch cross sysroot)")
# The X60 ISA minus Zicond: QEMU 7.2 lacks Zicond, and -mcpu=spacemit-x60 would emit czero.*.
set(RISCV_MARCH "rv64gcv_zba_zbb_zbs_zvl256b_zfh_zvfh" CACHE STRING "-march for the target")
set(RISCV_MTUNE "spacemit-x60" CACHE STRING "-mtune")
# QEMU's RVV is ~15x slower than scalar code: keep clang from auto-vectorising glue code for
# QEMU runs (the kernels use intrinsics and are unaffected). Set ON for a binary meant for a board.
set(RISCV_AUTOVEC OFF CACHE BOOL "let clang auto-vectorise (OFF for QEMU test builds)")
set(QEMU_CPU "rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,Zfh=true,zba=true,zbb=true,zbs=true"
    CACHE STRING "qemu-riscv64 -cpu (QEMU 7.2 spelling); add rvv_ta_all_1s=true,rvv_ma_all_1s=true")

set(CMAKE_C_COMPILER clang-${RISCV_CLANG_VERSION})
set(CMAKE_CXX_COMPILER clang++-${RISCV_CLANG_VERSION})
set(CMAKE_C_COMPILER_TARGET riscv64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET riscv64-linux-gnu)
set(_rv_flags "-march=${RISCV_MARCH} -mtune=${RISCV_MTUNE}")
if(NOT RISCV_AUTOVEC)
  string(APPEND _rv_flags " -fno-vectorize -fno-slp-vectorize")
endif()
set(CMAKE_C_FLAGS_INIT "${_rv_flags}")
# libstdc++ 12's std::stable_sort calls std::get_temporary_buffer, which clang-22 flags as
# deprecated inside the instantiation (not silenced as a system-header warning): -Werror breaks.
set(CMAKE_CXX_FLAGS_INIT "${_rv_flags} -Wno-deprecated-declarations")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-fuse-ld=lld")

list(APPEND CMAKE_FIND_ROOT_PATH "${RISCV_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR "/usr/bin/qemu-riscv64;-L;${RISCV_SYSROOT};-cpu;${QEMU_CPU}")

# Header-only nlohmann/json is architecture-independent but lives in the host's /usr/include,
# which must not be on a cross include path: expose just that directory through a symlink.
if(EXISTS /usr/include/nlohmann AND CMAKE_BINARY_DIR)
  set(_rv_host_headers "${CMAKE_BINARY_DIR}/host-headers")
  if(NOT EXISTS "${_rv_host_headers}/nlohmann")
    file(MAKE_DIRECTORY "${_rv_host_headers}")
    file(CREATE_LINK /usr/include/nlohmann "${_rv_host_headers}/nlohmann" SYMBOLIC)
  endif()
  set(NLOHMANN_INCLUDE "${_rv_host_headers}" CACHE PATH "nlohmann/json headers (host, header-only)")
endif()
