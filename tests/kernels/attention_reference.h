// The double-precision attention reference and random data of the attention kernel tests
// (attention_tile_test.cc, attention_q8_test.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/attention.h"

namespace nbits::kernels {

inline std::vector<float> rand_vec(int64_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// row: the row's index in the kernel call (its sink logit is sink_logit(p, row)).
inline std::vector<double> reference(const float* q, const float* K, const float* V, int64_t lo, int64_t hi,
                                     const AttentionParams& p, int64_t row = 0) {
  const int64_t H = p.head_size;
  std::vector<double> s(static_cast<size_t>(hi - lo)), out(static_cast<size_t>(H), 0.0);
  double mx = -INFINITY;
  for (int64_t j = lo; j < hi; ++j) {
    double d = 0;
    for (int64_t i = 0; i < H; ++i) d += double(q[i]) * K[j * H + i];
    d *= p.scale;
    if (p.softcap > 0) d = p.softcap * std::tanh(d / p.softcap);
    s[j - lo] = d;
    mx = std::max(mx, d);
  }
  const double sink = sink_logit(p, row);
  if (has_sink(p)) mx = std::max(mx, sink);
  double z = has_sink(p) ? std::exp(sink - mx) : 0.0;
  for (double& v : s) z += (v = std::exp(v - mx));
  for (int64_t j = lo; j < hi; ++j)
    for (int64_t i = 0; i < H; ++i) out[i] += s[j - lo] / z * V[j * H + i];
  return out;
}

}  // namespace nbits::kernels
