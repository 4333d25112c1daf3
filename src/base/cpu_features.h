// CPU features detected once at start-up (cpuid on x86, hwprobe / auxv on RISC-V).
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
  // RISC-V
  bool rvv = false;       // V extension 1.0
  int vlen_bits = 0;      // vector register width when rvv
  bool ime = false;       // SpacemiT vmadot (probed safely)

  std::string describe() const;  // e.g. "avx2 fma avx512vnni"
};

// Detected once (thread-safe). NBITS_ISA env var may lower it ("ref", "avx2", ...).
const CpuFeatures& cpu_features();

// Detects without caching or env override (used by tests to build variants).
CpuFeatures detect_cpu_features();

}  // namespace nbits
