// Which x86 kernel sets this build compiled (CMake NBITS_X86_KERNELS): all of them by default, so
// that the program runs each on any x86-64 CPU that has it; `host` leaves out the sets the build
// machine's CPU lacks (a lean build for that machine: the main job's). A set left out is not
// registered: the dispatch never sees it, as on a CPU without it.
#pragma once

#ifndef NBITS_X86_AVX512
#define NBITS_X86_AVX512 1  // *_avx512.cc: AVX-512F float kernels, attention
#endif
#ifndef NBITS_X86_AVX512VNNI
#define NBITS_X86_AVX512VNNI 1  // *_avx512vnni.cc: the zmm and ymm (EVEX) VNNI int8 sets
#endif
#ifndef NBITS_X86_AVXVNNI
#define NBITS_X86_AVXVNNI 1  // *_avxvnni.cc: the VEX AVX-VNNI int8 set
#endif
#ifndef NBITS_X86_AMX
#define NBITS_X86_AMX 1  // *_amx.cc: the AMX GEMM (with the AVX-512 VNNI set's GEMVs)
#endif
