// Bytes a decode step must read from memory, from the model shape alone, and
// the resulting floor on ms/token for a given bandwidth (the roofline).
#pragma once

#include <cstdint>

#include "modelgen/shapes.h"

namespace nbits::modelgen {

// Bytes of one MatMulNBits weight as stored in ONNX: codes + fp32 scales
// (+ packed zero points when asymmetric).
int64_t matmul_nbits_bytes(int64_t K, int64_t N, const QuantSpec& q);

struct TokenTraffic {
  int64_t layer_matmul_bytes = 0;  // qkv, o, gate, up, down of every layer
  int64_t lm_head_bytes = 0;       // the quantized lm_head
  int64_t small_bytes = 0;         // norms, qkv bias, one embedding row
  int64_t kv_bytes = 0;            // fp32 K and V of every layer at the given context
  int64_t weight_bytes() const { return layer_matmul_bytes + lm_head_bytes + small_bytes; }
  int64_t total() const { return weight_bytes() + kv_bytes; }
};

// What one decode step reads when `context` tokens are in the KV cache.
TokenTraffic token_traffic(const ModelShape& s, const QuantSpec& q, int64_t context);

// fp32 K+V bytes per token of context (all layers).
int64_t kv_bytes_per_position(const ModelShape& s);

// Floor in ms for reading `bytes` at `gbs` GB/s (1 GB = 1e9 bytes).
double floor_ms(int64_t bytes, double gbs);

}  // namespace nbits::modelgen
