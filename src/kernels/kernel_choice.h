// Kernel choice by measurement. A kernel table ordered by ISA level cannot know that a core runs
// 512-bit operations as two 256-bit halves (AMD Zen4: the zmm GEMV 1.4x slower than the AVX2 one)
// while another runs them whole (Intel Sapphire Rapids); a measurement can. Where several
// micro-kernels can run one packed weight, bit-exact to each other, the dispatch point asks this
// room which to use for a role (the M = 1 GEMV, the GEMM): each candidate is timed on the model's
// own weight the first time a (role, format) key is seen, briefly (a few ms), and the fastest is
// kept for the process and written to a cache file, one per CPU model, so later loads on the same
// CPU and build cost nothing.
//
//   file: $NBITS_KERNEL_CHOICE_FILE, else ${NBITS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nbits}/
//         kernel-choice/<cpu>.tsv: a header naming the CPU and the build, then one line per key
//         with the choice and every candidate's time (a person can read it and delete it).
//   A file that is unreadable as such, or names another CPU or build, is ignored with one warning
//   line on stderr and replaced by the new measurements; never trusted in part.
//   NBITS_ISA set (a forced level), or NBITS_KERNEL_CHOICE=off: no measurement, the first
//   candidate (the table's order) is used.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace nbits::kernels {

struct KernelCandidate {
  std::string name;           // the micro-kernel, e.g. "qgemv_q4x16_ymm_avx512vnni"
  std::function<void()> run;  // one timed call on the weight (the same work for every candidate)
  // Optional, untimed, before each timed call: e.g. evict the weight from the caches, since decode
  // streams it from memory (a GEMV timed in cache ranks kernels by arithmetic alone).
  std::function<void()> before = nullptr;
};

// One decision, for reports (nbits inspect / bench): the key, the names, the measured
// microseconds per call (empty when the choice came from the table order), where it came from.
struct KernelChoice {
  std::string key;
  std::vector<std::string> names;
  std::vector<double> us;
  size_t chosen = 0;
  enum class From { kOrder, kMeasured, kCacheFile } from = From::kOrder;
  std::string why;  // "measured", "cache file <path>", "NBITS_ISA=avx2", "one candidate", ...
};

// False where NBITS_ISA forces a level or NBITS_KERNEL_CHOICE=off: the table's order and each
// set's own format then hold (the dispatch point sets PackOptions::kernel_choice from this).
bool kernel_choice_on();

// The index of the candidate to use for `key` (role and packed format, e.g. "gemv q4x16h b32 sym").
// Thread-safe; measures at most once per key and process.
size_t choose_kernel(const std::string& key, const std::vector<KernelCandidate>& candidates);

// Every decision made in this process so far, in the order made.
std::vector<KernelChoice> kernel_choices();

// One line per decision: "gemv q4x16 b32 sym: qgemv_q4x16_ymm_avx512vnni (measured: ... 41.2 us, ...)".
std::string describe_kernel_choices();

// The cache file this process reads and writes ("" when there is none: no home, or choice off).
std::string kernel_choice_file();

// The CPU model as the cache file names it (x86: the cpuid brand string, family, model and
// stepping; elsewhere /proc/cpuinfo's model line), and the build (version, binary, size, mtime).
std::string kernel_choice_cpu();
std::string kernel_choice_build();

// Tests: forget the decisions made and the file read, so the next choose_kernel reads the file
// (NBITS_KERNEL_CHOICE_FILE) again.
void reset_kernel_choices_for_testing();

}  // namespace nbits::kernels
