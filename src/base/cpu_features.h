// CPU features detected once at start-up (cpuid on x86, hwprobe / auxv on RISC-V, HWCAP on arm64).
#pragma once

#include <string>

namespace nbits {

struct CpuFeatures {
  // x86
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx_vnni = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  // AMX-TILE + AMX-INT8, the OS saving the tile state (XCR0) and, on Linux, this process granted
  // the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM, asked for during detection).
  bool amx_int8 = false;
  // RISC-V
  bool rvv = false;   // V extension 1.0
  int vlen_bits = 0;  // vector register width when rvv
  bool ime = false;   // SpacemiT vmadot (probed safely)
  // arm64 (getauxval: AT_HWCAP / AT_HWCAP2)
  bool neon = false;     // Advanced SIMD (HWCAP_ASIMD; baseline on every ARMv8-A Linux core)
  bool dotprod = false;  // SDOT/UDOT (HWCAP_ASIMDDP: Cortex-A76/A55, Neoverse N1, Apple M1...)
  bool i8mm = false;     // SMMLA/USDOT (HWCAP2_I8MM: Neoverse V1/V2/N2, Cortex-A710+, Apple M2+)
  bool sve = false;      // SVE (HWCAP_SVE); detected and reported, no SVE kernels yet

  std::string describe() const;  // e.g. "avx2 fma avx512vnni"
};

// Detected once (thread-safe). NBITS_ISA env var may lower it ("ref", "avx2", ...; on arm64
// "neon" (no dotprod/i8mm/sve), "dotprod" (no i8mm/sve), "i8mm" (everything detected)).
const CpuFeatures& cpu_features();

// Detects without caching or env override (used by tests to build variants).
CpuFeatures detect_cpu_features();

}  // namespace nbits
