# Toolchain: Debian clang-22 (bookworm-security) targeting aarch64 (ARMv8-A baseline; the dotprod and
# i8mm kernel files get their own -march from cmake/sources.cmake and run only after the HWCAP check),
# with the GCC 12 cross sysroot/libstdc++ of g++-aarch64-linux-gnu, linked by lld-22. Target binaries
# run through qemu-aarch64 (QEMU 7.2 user mode) as CMake's crosscompiling emulator.
#   cmake -S . -B /tmp/arm64-build -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-clang.cmake \
#         -DNBITS_BUILD_BENCH=OFF
# tools/arm64/test.sh is the CI leg (kernel tests under -cpu max and -cpu cortex-a76, stories260K).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(AARCH64_CLANG_VERSION "22" CACHE STRING "clang-N to use")
set(AARCH64_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH "target libc (Debian multiarch cross sysroot)")
set(AARCH64_MARCH "armv8-a" CACHE STRING "-march of everything but the *_dotprod / *_i8mm kernel files")
set(QEMU_CPU "max" CACHE STRING "qemu-aarch64 -cpu for ctest (max: dotprod+i8mm+sve; cortex-a76: dotprod)")

set(CMAKE_C_COMPILER clang-${AARCH64_CLANG_VERSION})
set(CMAKE_CXX_COMPILER clang++-${AARCH64_CLANG_VERSION})
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
# (-ffp-contract=off, which keeps the reference numerics on an FMA-baseline ISA, comes from
# CMakeLists.txt for every arm64 build, native or cross.)
set(_a64_flags "-march=${AARCH64_MARCH}")
set(CMAKE_C_FLAGS_INIT "${_a64_flags}")
# libstdc++ 12's std::stable_sort calls std::get_temporary_buffer, which clang-22 flags as
# deprecated inside the instantiation (not silenced as a system-header warning): -Werror breaks.
set(CMAKE_CXX_FLAGS_INIT "${_a64_flags} -Wno-deprecated-declarations")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-fuse-ld=lld")

list(APPEND CMAKE_FIND_ROOT_PATH "${AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR "/usr/bin/qemu-aarch64;-L;${AARCH64_SYSROOT};-cpu;${QEMU_CPU}")

# Header-only nlohmann/json is architecture-independent but lives in the host's /usr/include,
# which must not be on a cross include path: expose just that directory through a symlink.
if(EXISTS /usr/include/nlohmann AND CMAKE_BINARY_DIR)
  set(_a64_host_headers "${CMAKE_BINARY_DIR}/host-headers")
  if(NOT EXISTS "${_a64_host_headers}/nlohmann")
    file(MAKE_DIRECTORY "${_a64_host_headers}")
    file(CREATE_LINK /usr/include/nlohmann "${_a64_host_headers}/nlohmann" SYMBOLIC)
  endif()
  set(NLOHMANN_INCLUDE "${_a64_host_headers}" CACHE PATH "nlohmann/json headers (host, header-only)")
endif()
