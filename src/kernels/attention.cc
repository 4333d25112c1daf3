#include "kernels/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/vector_ops.h"

namespace nbits::kernels {
namespace {

// Asks for the cache lines of [p, p + count) to be fetched (no-op on compilers without the builtin).
template <typename T>
inline void prefetch(const T* p, int64_t count) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t b = 0; b < count * static_cast<int64_t>(sizeof(T)); b += 64) __builtin_prefetch(c + b, 0, 3);
}

inline void dot_rows(const float* x, int64_t nx, int64_t xs, const float* M, int64_t rows, int64_t n,
                     float alpha, float* y, int64_t ys) {
  vec_dot_rows(x, nx, xs, M, rows, n, alpha, y, ys);
}
inline void dot_rows(const float* x, int64_t nx, int64_t xs, const uint16_t* M, int64_t rows, int64_t n,
                     float alpha, float* y, int64_t ys) {
  vec_dot_rows_f16(x, nx, xs, M, rows, n, alpha, y, ys);
}
inline void accumulate_rows(const float* p, int64_t np, int64_t ps, const float* M, int64_t rows, int64_t n,
                            float* y, int64_t ys) {
  vec_accumulate_rows(p, np, ps, M, rows, n, y, ys);
}
inline void accumulate_rows(const float* p, int64_t np, int64_t ps, const uint16_t* M, int64_t rows,
                            int64_t n, float* y, int64_t ys) {
  vec_accumulate_rows_f16(p, np, ps, M, rows, n, y, ys);
}

template <typename T>
void attend(const float* q, int64_t q_stride, int64_t nq, const T* K, const T* V, int64_t n,
            const AttentionParams& p, float* scratch, float* out, int64_t out_stride) {
  const int64_t H = p.head_size;
  // Rows per block: about 16 KiB of K (or V), so the block stays in L1 across the group.
  const int64_t block = std::max<int64_t>(8, 4096 / std::max<int64_t>(H, 1));
  // Decode reads K/V from memory: while the group works on a K block (in L1 after the first
  // head), fetch the next K block and this V block, a slice per head, so memory overlaps compute.
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t rows = std::min(block, n - j0);
    const int64_t next = std::min(block, std::max<int64_t>(0, n - j0 - block));
    for (int64_t g = 0; g < nq; g += 2) {
      const int64_t pair = std::min<int64_t>(2, nq - g);
      dot_rows(q + g * q_stride, pair, q_stride, K + j0 * H, rows, H, p.scale, scratch + g * n + j0, n);
      const int64_t k0 = next * H * g / nq, k1 = next * H * (g + pair) / nq;
      const int64_t v0 = rows * H * g / nq, v1 = rows * H * (g + pair) / nq;
      prefetch(K + (j0 + block) * H + k0, k1 - k0);
      prefetch(V + j0 * H + v0, v1 - v0);
    }
  }
  for (int64_t g = 0; g < nq; ++g) {
    float* s = scratch + g * n;
    if (p.softcap > 0.0f)
      for (int64_t j = 0; j < n; ++j) s[j] = p.softcap * std::tanh(s[j] / p.softcap);
    float mx = vec_max(s, n);
    if (p.smooth && mx < 0.0f) mx = 0.0f;
    float sum = vec_exp_shift_sum(s, n, mx);
    if (p.smooth) sum += std::exp(-mx);
    vec_scale(s, 1.0f / sum, n);
    std::fill(out + g * out_stride, out + g * out_stride + H, 0.0f);
  }
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t rows = std::min(block, n - j0);
    accumulate_rows(scratch + j0, nq, n, V + j0 * H, rows, H, out, out_stride);
  }
}

}  // namespace

void attend_group(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V, int64_t n,
                  const AttentionParams& p, float* scratch, float* out, int64_t out_stride) {
  attend(q, q_stride, nq, K, V, n, p, scratch, out, out_stride);
}

void attend_group(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                  int64_t n, const AttentionParams& p, float* scratch, float* out, int64_t out_stride) {
  attend(q, q_stride, nq, K, V, n, p, scratch, out, out_stride);
}

}  // namespace nbits::kernels
