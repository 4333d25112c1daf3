# RISC-V room (src/kernels/rvv, src/kernels/ime, tests/rvv): included by the root before the
# libraries are defined.

# tests/rvv link the kernels room only (not the whole core).
add_library(nbits_rvv INTERFACE)
target_link_libraries(nbits_rvv INTERFACE nbits_kernels)

# Cross builds: Debian's libgtest is x86-only, so build GoogleTest from its source package
# (/usr/src/googletest, libgtest-dev) with the cross compiler, and let tests/CMakeLists.txt's
# find_package(GTest) find these targets through a stub config file.
if(CMAKE_CROSSCOMPILING AND NBITS_BUILD_TESTS AND NOT TARGET GTest::gtest)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  target_compile_options(gtest PRIVATE -w)
  target_compile_options(gtest_main PRIVATE -w)
  if(NOT TARGET GTest::gtest)  # googletest >= 1.11 defines these aliases itself
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
  endif()
  file(WRITE ${CMAKE_BINARY_DIR}/gtest-config/GTestConfig.cmake
       "# GoogleTest targets come from /usr/src/googletest (cmake/room_riscv.cmake).\n")
  set(GTest_DIR ${CMAKE_BINARY_DIR}/gtest-config CACHE PATH "" FORCE)
endif()
