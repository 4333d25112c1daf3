#include "gguf/block_decode.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "gguf/iq_block_decode.h"

namespace nbits::gguf {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_float(h);
}

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IQ4_NL / IQ4_XS non-linear levels, and the e2m1 (fp4) values doubled of MXFP4 / NVFP4.
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int8_t kFp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

uint8_t level_code(const int8_t* table, int nibble) { return static_cast<uint8_t>(table[nibble] + 128); }

// Element e of a 256-element super-block whose 2-bit fields are packed 4 to a byte, 32 bytes
// per 128 elements (Q2_K, Q3_K, TQ2_0): byte (e/128)*32 + e%32, bits 2*((e%128)/32).
int crumb(const uint8_t* qs, int e) { return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

// ggml's get_scale_min_k4: 6-bit scale and min j (0..7) of a Q4_K/Q5_K super-block.
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// ggml_e8m0_to_fp32_half: 2^(e - 128), the MXFP4 scale halved (its levels are doubled).
float e8m0_half(uint8_t e) {
  return bits_to_float(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// Unsigned e4m3 (bias 7) NVFP4 sub-block scale, halved likewise; 0 and 0x7F read as 0.
float ue4m3_half(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0xF, man = x & 7;
  const double raw = exp == 0 ? man * 0x1p-9 : (1.0 + man / 8.0) * std::ldexp(1.0, exp - 7);
  return static_cast<float>(raw * 0.5);
}

void q4_k_or_q5_k(bool q5, const uint8_t* b, uint8_t* codes, float* scales, float* mins) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const uint8_t* sc = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + (q5 ? 48 : 16);
  for (int g = 0; g < 4; ++g) {
    for (int h = 0; h < 2; ++h) {
      int s = 0, m = 0;
      scale_min_k4(2 * g + h, sc, s, m);
      scales[2 * g + h] = d * static_cast<float>(s);
      mins[2 * g + h] = -(dmin * static_cast<float>(m));
    }
    for (int l = 0; l < 32; ++l) {
      const uint8_t q = ql[32 * g + l];
      if (q5) {
        codes[64 * g + l] = static_cast<uint8_t>((q & 15) + ((qh[l] >> (2 * g)) & 1) * 16 + 128);
        codes[64 * g + 32 + l] = static_cast<uint8_t>((q >> 4) + ((qh[l] >> (2 * g + 1)) & 1) * 16 + 128);
      } else {
        codes[64 * g + l] = q & 15;
        codes[64 * g + 32 + l] = q >> 4;
      }
    }
  }
}

void q6_k(const uint8_t* b, uint8_t* codes, float* scales) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int i = 0; i < 16; ++i) scales[i] = d * static_cast<float>(sc[i]);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* l6 = ql + 64 * n;
    const uint8_t* h6 = qh + 32 * n;
    uint8_t* c = codes + 128 * n;
    for (int l = 0; l < 32; ++l) {
      c[l] = static_cast<uint8_t>(((l6[l] & 15) | ((h6[l] & 3) << 4)) + 96);
      c[l + 32] = static_cast<uint8_t>(((l6[l + 32] & 15) | (((h6[l] >> 2) & 3) << 4)) + 96);
      c[l + 64] = static_cast<uint8_t>(((l6[l] >> 4) | (((h6[l] >> 4) & 3) << 4)) + 96);
      c[l + 96] = static_cast<uint8_t>(((l6[l + 32] >> 4) | (((h6[l] >> 6) & 3) << 4)) + 96);
    }
  }
}

// Q5_0 / Q5_1: the fifth bit of element j is bit j of the little-endian 32-bit qh.
void q5(const uint8_t* qh4, const uint8_t* qs, uint8_t offset, uint8_t* codes) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  for (int j = 0; j < 16; ++j) {
    codes[j] = static_cast<uint8_t>(((qs[j] & 15) | (((qh >> j) & 1) << 4)) + offset);
    codes[j + 16] = static_cast<uint8_t>(((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) + offset);
  }
}

// Q3_K's sixteen 6-bit scales: low nibbles in bytes 0..7 (elements 0..7, then their high
// nibbles 8..15), the top two bits of scale i in byte 8 + i%4 at bit 2*(i/4); minus 32.
int q3_k_scale(const uint8_t* s, int i) {
  const int low = i < 8 ? s[i] & 15 : s[i - 8] >> 4;
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// TQ1_0's base-3 digits: byte value q times 3^n (mod 256), then (q*3) >> 8 is the digit.
uint8_t trit(uint8_t q, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto v = static_cast<uint8_t>(q * kPow3[n]);
  return static_cast<uint8_t>((static_cast<uint16_t>(v) * 3) >> 8);
}

}  // namespace

BlockFormat block_format(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kTQ1_0:
    case GgmlType::kTQ2_0:
    case GgmlType::kQ1_0:
      return {4, 32, false, false};
    case GgmlType::kQ4_1:
    case GgmlType::kQ4_K:
      return {4, 32, true, true};
    case GgmlType::kQ5_0:
    case GgmlType::kQ8_0:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS:
    case GgmlType::kMXFP4:
      return {8, 32, false, false};
    case GgmlType::kQ5_1:
    case GgmlType::kQ5_K:
      return {8, 32, false, true};
    case GgmlType::kQ2_K:
      return {4, 16, true, true};
    case GgmlType::kQ3_K:
      return {4, 16, false, false};
    case GgmlType::kQ6_K:
    case GgmlType::kNVFP4:
      return {8, 16, false, false};
    default:
      return iq_block_format(t);
  }
}

void decode_block(GgmlType t, const uint8_t* b, uint8_t* codes, float* scales, float* mins) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1: {
      const uint8_t* qs = b + (t == GgmlType::kQ4_0 ? 2 : 4);
      for (int j = 0; j < 16; ++j) {
        codes[j] = qs[j] & 15;
        codes[j + 16] = qs[j] >> 4;
      }
      scales[0] = half_at(b);
      if (t == GgmlType::kQ4_1) mins[0] = half_at(b + 2);
      return;
    }
    case GgmlType::kQ5_0:
      q5(b + 2, b + 6, 112, codes);
      scales[0] = half_at(b);
      return;
    case GgmlType::kQ5_1:
      q5(b + 4, b + 8, 128, codes);
      scales[0] = half_at(b);
      mins[0] = half_at(b + 2);
      return;
    case GgmlType::kQ8_0:
      for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(static_cast<int8_t>(b[2 + j]) + 128);
      scales[0] = half_at(b);
      return;
    case GgmlType::kQ2_K: {
      const uint8_t* sc = b;
      const float d = half_at(b + 80), dmin = half_at(b + 82);
      for (int s = 0; s < 16; ++s) {
        scales[s] = d * static_cast<float>(sc[s] & 15);
        mins[s] = -(dmin * static_cast<float>(sc[s] >> 4));
      }
      for (int e = 0; e < 256; ++e) codes[e] = static_cast<uint8_t>(crumb(b + 16, e));
      return;
    }
    case GgmlType::kQ3_K: {
      const uint8_t* hmask = b;
      const float d = half_at(b + 108);
      for (int s = 0; s < 16; ++s) scales[s] = d * static_cast<float>(q3_k_scale(b + 96, s));
      for (int e = 0; e < 256; ++e) {
        const int high = (hmask[e % 32] >> (e / 32)) & 1;
        codes[e] = static_cast<uint8_t>(crumb(b + 32, e) - (high ? 0 : 4) + 8);
      }
      return;
    }
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
      q4_k_or_q5_k(t == GgmlType::kQ5_K, b, codes, scales, mins);
      return;
    case GgmlType::kQ6_K:
      q6_k(b, codes, scales);
      return;
    case GgmlType::kIQ4_NL:
      for (int j = 0; j < 16; ++j) {
        codes[j] = level_code(kIq4Levels, b[2 + j] & 15);
        codes[j + 16] = level_code(kIq4Levels, b[2 + j] >> 4);
      }
      scales[0] = half_at(b);
      return;
    case GgmlType::kIQ4_XS: {
      const float d = half_at(b);
      const uint16_t scales_h = static_cast<uint16_t>(b[2] | (b[3] << 8));
      const uint8_t* scales_l = b + 4;
      const uint8_t* qs = b + 8;
      for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((scales_h >> (2 * ib)) & 3) << 4);
        scales[ib] = d * static_cast<float>(ls - 32);
        for (int j = 0; j < 16; ++j) {
          codes[32 * ib + j] = level_code(kIq4Levels, qs[16 * ib + j] & 15);
          codes[32 * ib + 16 + j] = level_code(kIq4Levels, qs[16 * ib + j] >> 4);
        }
      }
      return;
    }
    case GgmlType::kTQ1_0: {
      const uint8_t* qs = b;  // 32 bytes x 5 digits, 16 bytes x 5 digits, then qh: 4 bytes x 4 digits
      const float d = half_at(b + 52);
      int e = 0;
      for (int n = 0; n < 5; ++n)
        for (int m = 0; m < 32; ++m) codes[e++] = static_cast<uint8_t>(trit(qs[m], n) + 7);
      for (int n = 0; n < 5; ++n)
        for (int m = 0; m < 16; ++m) codes[e++] = static_cast<uint8_t>(trit(qs[32 + m], n) + 7);
      for (int n = 0; n < 4; ++n)
        for (int j = 0; j < 4; ++j) codes[e++] = static_cast<uint8_t>(trit(b[48 + j], n) + 7);
      for (int s = 0; s < 8; ++s) scales[s] = d;
      return;
    }
    case GgmlType::kQ1_0: {  // one sign bit per value (set: +d), LSB first
      for (int e = 0; e < 128; ++e) codes[e] = static_cast<uint8_t>((b[2 + e / 8] >> (e % 8)) & 1 ? 9 : 7);
      for (int s = 0; s < 4; ++s) scales[s] = half_at(b);
      return;
    }
    case GgmlType::kTQ2_0: {
      const float d = half_at(b + 64);
      for (int e = 0; e < 256; ++e) codes[e] = static_cast<uint8_t>(crumb(b, e) + 7);
      for (int s = 0; s < 8; ++s) scales[s] = d;
      return;
    }
    case GgmlType::kMXFP4:
      for (int j = 0; j < 16; ++j) {
        codes[j] = level_code(kFp4Doubled, b[1 + j] & 15);
        codes[j + 16] = level_code(kFp4Doubled, b[1 + j] >> 4);
      }
      scales[0] = e8m0_half(b[0]);
      return;
    case GgmlType::kNVFP4:
      for (int s = 0; s < 4; ++s) {
        scales[s] = ue4m3_half(b[s]);
        for (int j = 0; j < 8; ++j) {
          codes[16 * s + j] = level_code(kFp4Doubled, b[4 + 8 * s + j] & 15);
          codes[16 * s + 8 + j] = level_code(kFp4Doubled, b[4 + 8 * s + j] >> 4);
        }
      }
      return;
    default:
      decode_iq_block(t, b, codes, scales);
  }
}

}  // namespace nbits::gguf
