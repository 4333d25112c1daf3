// Seeded random weights of realistic scale, and the ONNX Runtime quantizer's
// block-wise formulas (spec 1.4) to turn them into MatMulNBits initializers.
// Every value is a pure function of (seed, tensor, row), so the same weights can
// be produced for ONNX and GGUF files and in any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "modelgen/shapes.h"

namespace nbits::modelgen {

enum class WeightKind : uint32_t {
  kQkv,        // [qkv_out, hidden] rows: Q heads, then K heads, then V heads
  kO,          // [hidden, q_out]
  kGate,       // [intermediate, hidden]
  kUp,         // [intermediate, hidden]
  kDown,       // [hidden, intermediate]
  kLmHead,     // [vocab, hidden]; also the embedding table of tied models
  kEmbed,      // [vocab, hidden] (untied models)
  kInputNorm,  // [hidden] per layer (layer == layers: final norm)
  kPostNorm,   // [hidden] per layer
  kQkvBias,    // [qkv_out] per layer
};

// Row `row` of weight (kind, layer): `out.size()` values. Matrices are N rows of
// K (the MatMulNBits B layout: one row per output feature), std 0.02; norms are
// 1 + 0.1 N(0,1); biases 0.02 N(0,1). Approximately normal (sum of 4 uniforms).
void weight_row(uint64_t seed, WeightKind kind, int64_t layer, int64_t row, std::span<float> out);

// A whole vector weight (norms, biases): weight_row(..., row 0, n values).
std::vector<float> weight_vector(uint64_t seed, WeightKind kind, int64_t layer, int64_t n);

// MatMulNBits initializers for one weight, exactly as ORT's quantizer lays them out.
struct QuantizedWeight {
  int64_t N = 0, K = 0, k_blocks = 0;
  std::vector<uint8_t> codes;        // [N, k_blocks, block*bits/8]
  std::vector<uint8_t> scales;       // fp32 [N * k_blocks], little-endian bytes
  std::vector<uint8_t> zero_points;  // packed [N, ceil(k_blocks*bits/8)]; empty when symmetric
};

// Quantizes one row of K floats (spec 1.4: symmetric scale = -m/2^(bits-1) with
// m the value of largest magnitude, q = clamp(roundf(v/scale + zp)); asymmetric
// with zero points). Writes k_blocks blobs, scales and (asym) packed zero points.
void quantize_row(const float* row, int64_t K, const QuantSpec& q, uint8_t* codes, float* scales,
                  uint8_t* zero_points);

// Generates and quantizes the N x K weight (kind, layer) on `pool`.
QuantizedWeight make_quantized(uint64_t seed, WeightKind kind, int64_t layer, int64_t N, int64_t K,
                               const QuantSpec& q, ThreadPool& pool);

// The fp32 rows of a weight as bytes (N x K floats), e.g. the embedding table.
std::vector<uint8_t> make_float_matrix(uint64_t seed, WeightKind kind, int64_t layer, int64_t N, int64_t K,
                                       ThreadPool& pool);

}  // namespace nbits::modelgen
