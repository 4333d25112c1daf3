// STREAM-like memory read bandwidth: sums an array far larger than the caches
// with `threads` threads, several repetitions, and reports the median.
#pragma once

#include <cstddef>
#include <vector>

namespace nbits::modelgen {

struct BandwidthResult {
  int threads = 1;
  size_t bytes = 0;  // array size
  int reps = 0;
  double median_gbs = 0.0;  // 1 GB = 1e9 bytes
  double best_gbs = 0.0;
  double worst_gbs = 0.0;
  std::vector<double> gbs;  // every repetition, in run order
};

// Allocates `bytes` (rounded down to 64 KiB), first-touches it from the worker
// threads, then times `reps` full read passes. Throws nbits::Error on bad args.
BandwidthResult measure_read_bandwidth(int threads, size_t bytes, int reps);

}  // namespace nbits::modelgen
