// GGUF quantized weights mapped without loss onto MatMulNBits' layout
// (kernels::QuantizedMatrix): unsigned codes [N][k_blocks][block*bits/8] (byte j
// of a 4-bit block holds element 2j low, 2j+1 high), fp32 scales per block,
// optional zero points, plus a per-block additive term `mins` for the types
// whose value is q*d + m (applied by MatMulNBits as y[n] += sum_b m[n,b] *
// sum_{k in b} a[k]):
//
// the types and their mapping are listed in gguf/block_decode.h.
//
// Every value equals the ggml dequantization exactly (fp32 (code-zp)*scale + min).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/reader.h"

namespace nbits::gguf {

// What to_nbits(t) gives, without converting: shape, format, and which optional parts it fills.
struct NBitsShape {
  int64_t N = 0, K = 0;
  int bits = 4, block_size = 32;
  bool has_zero_points = false, has_mins = false;

  int64_t k_blocks() const { return K / block_size; }
  int64_t blob_bytes() const { return static_cast<int64_t>(block_size) * bits / 8; }
  int64_t zp_row_bytes() const { return (k_blocks() * bits + 7) / 8; }
};

struct NBitsMatrix : NBitsShape {
  std::vector<uint8_t> codes;
  std::vector<float> scales;         // [N * k_blocks]
  std::vector<uint8_t> zero_points;  // [N][ceil(k_blocks*bits/8)] packed like ONNX; empty: 2^(bits-1)
  std::vector<float> mins;           // [N * k_blocks]; empty: none

  float value(int64_t n, int64_t k) const;  // the dequantized element
};

// True for the types of gguf/block_decode.h.
bool maps_to_nbits(GgmlType t);
// Why a type does not map in this build, as a clause to append to a refusal: for ggml's lattice
// types (IQ1/IQ2/IQ3) in a build without their tables, how to get them; else "".
std::string unmapped_note(GgmlType t);
// Bits per weight of a mapped type as MatMulNBits holds it (codes, fp32 scales, fp32 mins,
// zero points) and as the file stores it (Q5_0: 9.0 against 5.5).
double mapped_bits_per_weight(GgmlType t);
double file_bits_per_weight(GgmlType t);
// A 2-D tensor [ne0 = K, ne1 = N] of one of those types. Throws "<file>: tensor
// 'X' has type T, which nbits cannot run as a quantized matmul" otherwise.
NBitsMatrix to_nbits(const File& f, const TensorInfo& t);
// to_nbits(f, t)'s shape and format, checked as to_nbits checks them, without converting.
NBitsShape nbits_shape(const File& f, const TensorInfo& t);
// Appends src's rows to dst (same K, bits, block and kind of zero point / mins).
void append_rows(NBitsMatrix& dst, const NBitsMatrix& src);
// Rows [n0, n0 + n) of m (phi3's ffn_up holds the gate rows, then the up rows).
NBitsMatrix take_rows(const NBitsMatrix& m, int64_t n0, int64_t n);

// True when to_float() can widen this type (F32, F16, BF16 and the mapped types).
bool widens_to_float(GgmlType t);
// The whole tensor as fp32 (row-major, ne0 fastest). Throws for other types.
std::vector<float> to_float(const File& f, const TensorInfo& t);

}  // namespace nbits::gguf
