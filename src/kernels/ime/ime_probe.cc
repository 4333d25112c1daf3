#include "kernels/ime/ime_probe.h"

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace nbits::kernels::ime {
namespace {

#if defined(__riscv_v_intrinsic) && !(defined(IME_EMULATE) && IME_EMULATE)
thread_local sigjmp_buf t_probe_jmp;

void on_sigill(int) { siglongjmp(t_probe_jmp, 1); }

// Executes one real vmadotsu; returns false if it trapped.
bool try_vmadot() {
  if (sigsetjmp(t_probe_jmp, 1) != 0) return false;
  asm volatile(
      "vsetvli zero, %0, e8, m1, ta, ma\n\t"
      "vmv.v.i v0, 0\n\tvmv.v.i v1, 0\n\t"
      ".insn r 0x2b, 2, 0x71, v2, v0, v1\n\t" ::"r"(32)
      : "v0", "v1", "v2", "v3", "vl", "vtype");
  return true;
}

uint64_t probe_cores(const cpu_set_t& allowed) {
  struct sigaction sa, old;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigill;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, &old);
  uint64_t mask = 0;
  for (int c = 0; c < 64; ++c) {
    if (!CPU_ISSET(c, &allowed)) continue;
    bool ok = false;
    std::thread t([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0) ok = try_vmadot();
    });
    t.join();
    if (ok) mask |= uint64_t{1} << c;
  }
  sigaction(SIGILL, &old, nullptr);
  return mask;
}
#else
uint64_t probe_cores(const cpu_set_t& allowed) {
#if defined(__riscv_v_intrinsic)
  uint64_t mask = 0;  // emulated vmadot runs anywhere
  for (int c = 0; c < 64; ++c)
    if (CPU_ISSET(c, &allowed)) mask |= uint64_t{1} << c;
  return mask;
#else
  (void)allowed;
  return 0;  // no RVV intrinsics: no IME kernels either
#endif
}
#endif

}  // namespace

uint64_t ime_core_mask() {
  static const uint64_t mask = [] {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return uint64_t{0};
    return probe_cores(allowed);
  }();
  return mask;
}

bool ime_usable() {
  const char* env = std::getenv("NBITS_ISA");
  if (env != nullptr) {
    const std::string v = env;
    if (v == "rvv" || v == "ref" || v == "scalar") return false;
  }
  return ime_core_mask() != 0;
}

std::string ime_describe() {
#if !defined(__riscv_v_intrinsic)
  return "ime: none (not a RISC-V RVV build)";
#else
  const char* env = std::getenv("NBITS_ISA");
  if (env != nullptr && !ime_usable() && ime_core_mask() != 0)
    return std::string("ime: off (NBITS_ISA=") + env + ")";
  const uint64_t mask = ime_core_mask();
  if (mask == 0) return "ime: none (vmadot traps on every core)";
#if defined(IME_EMULATE) && IME_EMULATE
  return "ime: emulated (IME_EMULATE build)";
#else
  std::string cores;
  for (int c = 0; c < 64; ++c) {
    if (!(mask >> c & 1)) continue;
    int e = c;
    while (e + 1 < 64 && (mask >> (e + 1) & 1)) ++e;
    if (!cores.empty()) cores += ",";
    cores += std::to_string(c) + (e > c ? "-" + std::to_string(e) : "");
    c = e;
  }
  return "ime: cores " + cores + " (vmadot probe)";
#endif
#endif
}

void pin_thread_to_ime_cores() {
  thread_local bool pinned = false;
  if (pinned) return;
  pinned = true;
  const uint64_t mask = ime_core_mask();
  cpu_set_t cur, want;
  CPU_ZERO(&cur);
  CPU_ZERO(&want);
  if (pthread_getaffinity_np(pthread_self(), sizeof cur, &cur) != 0) return;
  bool any = false, outside = false;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &cur)) continue;
    if (c < 64 && (mask >> c & 1)) {
      CPU_SET(c, &want);
      any = true;
    } else {
      outside = true;
    }
  }
  if (!outside) return;  // already only on IME cores
  if (!any)
    for (int c = 0; c < 64; ++c)
      if (mask >> c & 1) CPU_SET(c, &want);
  pthread_setaffinity_np(pthread_self(), sizeof want, &want);
}

}  // namespace nbits::kernels::ime
