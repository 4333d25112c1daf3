// Attention of a group of query rows that share the same key/value rows (the
// query heads of one GroupQueryAttention kv head at one position): K and V are
// read once per block for the whole group, with the vector_ops helpers.
#pragma once

#include <cstdint>

namespace nbits::kernels {

struct AttentionParams {
  int64_t head_size = 0;  // H: length of q, K and V rows
  float scale = 1.0f;     // scores = scale * q.k
  float softcap = 0.0f;   // > 0: scores = softcap * tanh(scores / softcap)
  bool smooth = false;    // smooth softmax: an extra exp(0) term in the denominator
};

// For g < nq: out[g * out_stride + i] = sum_j softmax_j(scale * q_g . K_j) V[j * H + i], with
// q_g = q + g * q_stride and j < n (K, V: n rows of H floats). n >= 1; scratch holds nq * n floats.
void attend_group(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V, int64_t n,
                  const AttentionParams& p, float* scratch, float* out, int64_t out_stride);
// The same over an IEEE fp16 cache (K, V: n rows of H halves), widened as read.
void attend_group(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                  int64_t n, const AttentionParams& p, float* scratch, float* out, int64_t out_stride);

}  // namespace nbits::kernels
