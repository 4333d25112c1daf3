// One ggml quantization block decoded, without loss, into MatMulNBits' terms: an unsigned
// code per element, and per nbits block (a fixed slice of the ggml block) a scale and, for
// the types whose value is q*d + m, an additive min. value = (code - zp) * scale + min, with
// zp the implicit 2^(bits-1) or an explicit 0 (Format::zp0). This is the only place that
// knows ggml's block layouts (they follow ggml's dequantize_row_* and gguf-py's port):
//
//   type    ggml block  nbits  block  code            zp    scale           min
//   Q4_0     32 / 18 B  4-bit   32    q               8     d
//   Q4_1     32 / 20 B  4-bit   32    q               0     d               m
//   Q5_0     32 / 22 B  8-bit   32    q + 112         128   d
//   Q5_1     32 / 24 B  8-bit   32    q + 128         128   d               m
//   Q8_0     32 / 34 B  8-bit   32    q + 128         128   d
//   Q2_K    256 / 84 B  4-bit   16    q (0..3)        0     d*sc            -dmin*m
//   Q3_K    256 / 110 B 4-bit   16    q + 8 (-4..3)   8     d*(sc-32)
//   Q4_K    256 / 144 B 4-bit   32    q               0     d*sc            -dmin*m
//   Q5_K    256 / 176 B 8-bit   32    q + 128         128   d*sc            -dmin*m
//   Q6_K    256 / 210 B 8-bit   16    q + 96          128   d*sc
//   IQ4_NL   32 / 18 B  8-bit   32    kv[q] + 128     128   d
//   IQ4_XS  256 / 136 B 8-bit   32    kv[q] + 128     128   d*(sc-32)
//   TQ1_0   256 / 54 B  4-bit   32    t + 8 (-1..1)   8     d
//   TQ2_0   256 / 66 B  4-bit   32    t + 8 (-1..1)   8     d
//   Q1_0    128 / 18 B  4-bit   32    8 +- 1 (bit)    8     d
//   MXFP4    32 / 17 B  8-bit   32    kv[q] + 128     128   2^(e-128)
//   NVFP4    64 / 36 B  8-bit   16    kv[q] + 128     128   ue4m3(s) / 2
//   IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: 8-bit codes, see iq_block_decode.h
//
// kv: IQ4_NL's 16-entry non-linear table; MXFP4/NVFP4: e2m1 values doubled (as ggml stores
// them, the scales halved to match). The 8-bit forms of 5- and 6-bit codes and the 4-bit
// forms of 2- and 3-bit codes stream more bytes than the file holds (bytes_per_weight()), unless
// a kernel set packs them narrower (AVX2 packs codes that span 32 values as int5: Q5_0 / Q5_1 / Q5_K).
#pragma once

#include <cstdint>

#include "gguf/types.h"

namespace nbits::gguf {

struct BlockFormat {
  int bits = 0;      // 4 or 8; 0: the type is not decoded here
  int block = 0;     // nbits block size (elements per scale)
  bool zp0 = false;  // explicit zero points 0 (else the implicit 2^(bits-1))
  bool mins = false;
};

BlockFormat block_format(GgmlType t);

// Decodes one ggml block of type t at b: type_traits(t).block codes, and
// type_traits(t).block / block_format(t).block scales (and mins when the format has them).
void decode_block(GgmlType t, const uint8_t* b, uint8_t* codes, float* scales, float* mins);

}  // namespace nbits::gguf
