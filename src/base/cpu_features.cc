#include "base/cpu_features.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__riscv) || defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace nbits {

std::string CpuFeatures::describe() const {
  std::ostringstream os;
  const char* sep = "";
  auto add = [&](bool on, const char* name) {
    if (on) {
      os << sep << name;
      sep = " ";
    }
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx_vnni, "avx-vnni");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(amx_int8, "amx-int8");
  if (rvv) os << sep << "rvv(vlen=" << vlen_bits << ")", sep = " ";
  add(ime, "ime");
  add(neon, "neon");
  add(dotprod, "dotprod");
  add(i8mm, "i8mm");
  add(sve, "sve");
  std::string s = os.str();
  return s.empty() ? "scalar" : s;
}

#if defined(__x86_64__) || defined(_M_X64)
static unsigned long long xgetbv0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

// Linux hands out the AMX tile data state (XFEATURE 18) only on request, once per process; without
// it the first tile instruction faults. Other systems: no AMX kernels.
static bool amx_permitted() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(_M_X64)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool avx = (c >> 28) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_ok = (xcr0 & 0x6) == 0x6;
  const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
  if (!(avx && ymm_ok)) {
    f.fma = f.f16c = false;
    return f;
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1;
    if (zmm_ok) {
      f.avx512f = (b >> 16) & 1;
      f.avx512dq = (b >> 17) & 1;
      f.avx512bw = (b >> 30) & 1;
      f.avx512vl = (b >> 31) & 1;
      f.avx512vnni = (c >> 11) & 1;
    }
    const bool tile_state = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
    const bool amx = ((d >> 24) & 1) && ((d >> 25) & 1);  // AMX-TILE, AMX-INT8
    f.amx_int8 = amx && tile_state && amx_permitted();
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx_vnni = (a >> 4) & 1;
#elif defined(__riscv)
  unsigned long hw = getauxval(AT_HWCAP);
  f.rvv = (hw & (1ul << ('V' - 'A'))) != 0;
#if defined(__riscv_vector)
  if (f.rvv) {
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb));
    f.vlen_bits = static_cast<int>(vlenb * 8);
  }
#endif
  // IME availability is decided by the IME kernels' own safe probe.
#elif defined(__aarch64__)
  // Bit numbers of the Linux arm64 ABI (asm/hwcap.h), spelled out so an old libc's headers do not
  // matter: HWCAP_ASIMD 1, HWCAP_ASIMDDP 20, HWCAP_SVE 22; HWCAP2_I8MM 13.
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  f.neon = (hw & (1ul << 1)) != 0;
  f.dotprod = f.neon && (hw & (1ul << 20)) != 0;
  f.i8mm = f.neon && (hw2 & (1ul << 13)) != 0;
  f.sve = (hw & (1ul << 22)) != 0;
#endif
  return f;
}

// NBITS_ISA lowers the detected level for testing and comparison:
//   ref (no SIMD kernels), avx2 (no AVX-512, no AVX-VNNI), avxvnni (AVX2 + AVX-VNNI, no AVX-512),
//   avx512 (AVX-512 without VNNI),
//   avx512vnni (the AVX-512 kernels, VNNI included; no AVX-VNNI, no AMX), amx (all of it), rvv (no IME), ime;
//   arm64: neon (no dotprod, i8mm, sve), dotprod (no i8mm, sve), i8mm (all detected). Anything else, or a
//   level the CPU lacks, throws nbits::Error listing the levels it has.
// The levels NBITS_ISA may name on this CPU (those it can run), lowest first.
static std::string available_levels(const CpuFeatures& f) {
  std::string r = "ref";
  if (f.avx2 && f.fma) r += ", avx2";
  if (f.avx2 && f.fma && f.avx_vnni) r += ", avxvnni";
  if (f.avx512f && f.avx512bw && f.avx512vl) r += ", avx512";
  if (f.avx512vnni) r += ", avx512vnni";
  if (f.amx_int8) r += ", amx";
  if (f.rvv) r += ", rvv";
  if (f.ime) r += ", ime";
  if (f.neon) r += ", neon";
  if (f.dotprod) r += ", dotprod";
  if (f.i8mm) r += ", i8mm";
  return r;
}

static CpuFeatures apply_env_override(CpuFeatures f) {
  const char* env = std::getenv("NBITS_ISA");
  if (env == nullptr || *env == 0) return f;
  const std::string v = env;
  // A level this CPU cannot run, or a name that is no level, is refused: running
  // something else than what was asked for would make comparisons lie.
  auto require = [&](bool have) {
    NBITS_CHECK(have, "NBITS_ISA=", v, ": this CPU cannot run that level (it has: ", available_levels(f),
                ")");
  };
  if (v == "ref" || v == "scalar") return CpuFeatures{};
  if (v == "avx2") {
    require(f.avx2 && f.fma);
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = f.avx_vnni = f.amx_int8 = false;
  } else if (v == "avxvnni") {
    require(f.avx2 && f.fma && f.avx_vnni);
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = f.amx_int8 = false;
  } else if (v == "avx512" || v == "avx512vnni") {
    require(v == "avx512" ? f.avx512f && f.avx512bw && f.avx512vl : f.avx512vnni);
    f.avx_vnni = f.amx_int8 = false;
    if (v == "avx512") f.avx512vnni = false;
  } else if (v == "amx") {
    require(f.amx_int8 && f.avx512vnni);
  } else if (v == "rvv") {
    require(f.rvv);
    f.ime = false;
  } else if (v == "ime") {
    require(f.ime);
  } else if (v == "neon") {
    require(f.neon);
    f.dotprod = f.i8mm = f.sve = false;
  } else if (v == "dotprod") {
    require(f.dotprod);
    f.i8mm = f.sve = false;
  } else if (v == "i8mm") {
    require(f.i8mm);
  } else {
    fail("NBITS_ISA=", v, " is not a kernel level (this CPU has: ", available_levels(f), ")");
  }
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = apply_env_override(detect_cpu_features());
  return f;
}

}  // namespace nbits
