# Helpers shared by the CMake files.

# nbits_glob(OUT dir...) : every *.cc directly in each dir (not recursive).
function(nbits_glob out)
  set(files)
  foreach(dir ${ARGN})
    file(GLOB found CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cc)
    list(APPEND files ${found})
  endforeach()
  list(SORT files)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# x86 kernel files carry their ISA in their name; only that file is compiled
# with the ISA's flags and it is only called after the run-time CPU check.
function(nbits_isa_flags_x86 files)
  foreach(f ${files})
    get_filename_component(n ${f} NAME_WE)
    if(n MATCHES "_amx$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
        "-mamx-tile;-mamx-int8;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mfma;-mavx2;-mf16c")
    elseif(n MATCHES "_avx512vnni$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mfma;-mavx2;-mf16c")
    elseif(n MATCHES "_avx512$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mfma;-mavx2;-mf16c")
    elseif(n MATCHES "_avxvnni$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-mavxvnni;-mavx2;-mfma;-mf16c")
    elseif(n MATCHES "_avx2$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    endif()
  endforeach()
endfunction()

# NBITS_X86_KERNELS=host: the x86 kernel sets the build machine's CPU lacks (its /proc/cpuinfo
# flags), as the suffixes of their files: amx avxvnni avx512vnni avx512. Such files are left
# uncompiled and their sets unregistered (src/kernels/x86/built_sets.h).
# NBITS_X86_HOST_FLAGS (a space-separated flag list) stands in for /proc/cpuinfo's: to build, on one
# machine, what another CPU's host build would be.
function(nbits_x86_sets_absent out)
  if(DEFINED NBITS_X86_HOST_FLAGS)
    set(flags " ${NBITS_X86_HOST_FLAGS} ")
  else()
    if(CMAKE_CROSSCOMPILING OR NOT EXISTS /proc/cpuinfo)
      message(FATAL_ERROR "NBITS_X86_KERNELS=host needs a native Linux build (it reads /proc/cpuinfo)")
    endif()
    file(STRINGS /proc/cpuinfo flags_lines REGEX "^flags" LIMIT_COUNT 1)
    string(REGEX REPLACE "^flags[ \t]*:[ \t]*" " " flags " ${flags_lines} ")
  endif()
  set(absent)
  set(avx512 ON)
  foreach(f avx512f avx512bw avx512vl avx512dq)
    if(NOT flags MATCHES " ${f} ")
      set(avx512 OFF)
    endif()
  endforeach()
  if(NOT avx512)
    list(APPEND absent avx512)
  endif()
  if(NOT avx512 OR NOT flags MATCHES " avx512_vnni ")
    list(APPEND absent avx512vnni amx)  # the AMX set runs the AVX-512 VNNI set's GEMVs
  elseif(NOT flags MATCHES " amx_int8 " OR NOT flags MATCHES " amx_tile ")
    list(APPEND absent amx)
  endif()
  if(NOT flags MATCHES " avx_vnni ")
    list(APPEND absent avxvnni)
  endif()
  set(${out} ${absent} PARENT_SCOPE)
endfunction()

# arm64 kernel files likewise: *_dotprod.cc (SDOT, ARMv8.2-A+dotprod: Cortex-A76/Pi 5, Neoverse N1)
# and *_i8mm.cc (SMMLA; +dotprod). armv8.2-a+i8mm rather than armv8.6-a: cores with i8mm but below
# v8.6 (Neoverse V1 is v8.4) exist, and these files must not use anything else of v8.6. Other files
# build for the toolchain's baseline (plain ARMv8-A NEON). Only called after the HWCAP check.
function(nbits_isa_flags_arm64 files)
  foreach(f ${files})
    get_filename_component(n ${f} NAME_WE)
    if(n MATCHES "_i8mm$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm")
    elseif(n MATCHES "_dotprod$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
    endif()
  endforeach()
endfunction()

# riscv64 kernel files that use fixed-length vector types (sized RVV types in arrays and structs:
# attention_rvv.cc) get -mrvv-vector-bits=zvl: vectors of the -march's zvl bits (256), checked at
# run time before such a kernel is chosen. The other RVV kernels are vector-length agnostic.
function(nbits_isa_flags_riscv files)
  foreach(f ${files})
    get_filename_component(n ${f} NAME_WE)
    if(n MATCHES "^attention_rvv$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-mrvv-vector-bits=zvl")
    endif()
  endforeach()
endfunction()
