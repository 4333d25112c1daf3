#include "gguf/iq_block_decode.h"

#include <bit>
#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "gguf/iq_lattices.h"

namespace nbits::gguf {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_float(h);
}

uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ggml's ksigns_iq2xs: 7 sign bits, the eighth their parity (an even count of minus signs).
uint8_t parity_signs(uint32_t seven) {
  return static_cast<uint8_t>(seven | ((std::popcount(seven & 127u) & 1u) << 7));
}

// n values of a lattice point, the i-th negated where bit i of signs is set, as codes around 128.
void signed_point(const int8_t* point, int n, uint8_t signs, uint8_t* codes) {
  for (int j = 0; j < n; ++j)
    codes[j] = static_cast<uint8_t>(128 + ((signs >> j) & 1 ? -point[j] : point[j]));
}

void iq2_xxs(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const float d = half_at(b);
  for (int ib = 0; ib < 8; ++ib) {
    const uint8_t* g = b + 2 + 8 * ib;  // four point indices, then 4 x 7 sign bits and a 4-bit scale
    const uint32_t aux = u32_at(g + 4);
    scales[ib] = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l)
      signed_point(lat.iq2xxs[g[l]], 8, parity_signs((aux >> (7 * l)) & 127), codes + 32 * ib + 8 * l);
  }
}

void iq2_xs(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const float d = half_at(b);
  const uint8_t* sc = b + 66;
  for (int s = 0; s < 16; ++s)
    scales[s] = d * (0.5f + static_cast<float>((sc[s / 2] >> (4 * (s % 2))) & 15)) * 0.25f;
  for (int k = 0; k < 32; ++k) {  // 9 bits of point, 7 of signs
    const uint16_t q = u16_at(b + 2 + 2 * k);
    signed_point(lat.iq2xs[q & 511], 8, parity_signs(q >> 9), codes + 8 * k);
  }
}

void iq2_s(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const float d = half_at(b);
  const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
  for (int s = 0; s < 16; ++s)
    scales[s] = d * (0.5f + static_cast<float>((sc[s / 2] >> (4 * (s % 2))) & 15)) * 0.25f;
  for (int k = 0; k < 32; ++k) {
    const int index = qs[k] | (((qh[k / 4] >> (2 * (k % 4))) & 3) << 8);
    signed_point(lat.iq2s[index], 8, signs[k], codes + 8 * k);
  }
}

void iq3_xxs(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t aux = u32_at(b + 66 + 4 * ib);
    scales[ib] = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {  // 8 values: two points of 4 under one 7-bit sign group
      const uint8_t signs = parity_signs((aux >> (7 * l)) & 127);
      uint8_t* c = codes + 32 * ib + 8 * l;
      signed_point(lat.iq3xxs[qs[8 * ib + 2 * l]], 4, signs, c);
      signed_point(lat.iq3xxs[qs[8 * ib + 2 * l + 1]], 4, static_cast<uint8_t>(signs >> 4), c + 4);
    }
  }
}

void iq3_s(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const float d = half_at(b);
  const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
  for (int ib = 0; ib < 8; ++ib)
    scales[ib] = d * static_cast<float>(1 + 2 * ((sc[ib / 2] >> (4 * (ib % 2))) & 15));
  for (int k = 0; k < 64; ++k) {  // 9-bit point indices, 4 values each
    const int index = qs[k] | (((qh[k / 8] >> (k % 8)) & 1) << 8);
    signed_point(lat.iq3s[index], 4, static_cast<uint8_t>(signs[k / 2] >> (4 * (k % 2))), codes + 4 * k);
  }
}

// 8 values of an IQ1 point plus (delta_negative ? -1/8 : 1/8), in eighths.
void iq1_point(const int8_t* point, bool delta_negative, uint8_t* codes) {
  for (int j = 0; j < 8; ++j) codes[j] = static_cast<uint8_t>(128 + 8 * point[j] + (delta_negative ? -1 : 1));
}

void iq1_s(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib) {
    const uint16_t qh = u16_at(b + 34 + 2 * ib);  // 4 x 3 index bits, a 3-bit scale, the delta's sign
    scales[ib] = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1) * 0.125f;
    for (int l = 0; l < 4; ++l)
      iq1_point(lat.iq1s[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], (qh & 0x8000) != 0,
                codes + 32 * ib + 8 * l);
  }
}

void iq1_m(const IqLattices& lat, const uint8_t* b, uint8_t* codes, float* scales) {
  const uint8_t *qs = b, *qh = b + 32;
  uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = u16_at(b + 48 + 2 * i);
  // The fp16 d is spread over the top nibbles of the four scale words.
  const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                            ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  const float d = fp16_to_float(d_bits);
  for (int s = 0; s < 16; ++s)
    scales[s] = d * static_cast<float>(2 * ((sc[s / 4] >> (3 * (s % 4))) & 7) + 1) * 0.125f;
  for (int k = 0; k < 32; ++k) {  // a nibble per 8 values: 3 index bits and the delta's sign
    const int nib = (qh[k / 2] >> (4 * (k % 2))) & 15;
    iq1_point(lat.iq1s[qs[k] | ((nib & 7) << 8)], (nib & 8) != 0, codes + 8 * k);
  }
}

}  // namespace

bool is_iq_lattice_type(GgmlType t) {
  switch (t) {
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S:
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S:
    case GgmlType::kIQ1_S:
    case GgmlType::kIQ1_M:
      return true;
    default:
      return false;
  }
}

BlockFormat iq_block_format(GgmlType t) {
  if (!is_iq_lattice_type(t) || iq_lattices() == nullptr) return {};
  const bool per16 = t == GgmlType::kIQ2_XS || t == GgmlType::kIQ2_S || t == GgmlType::kIQ1_M;
  return {8, per16 ? 16 : 32, false, false};
}

void decode_iq_block(GgmlType t, const uint8_t* b, uint8_t* codes, float* scales) {
  const IqLattices* lat = iq_lattices();
  NBITS_ASSERT(lat != nullptr);
  switch (t) {
    case GgmlType::kIQ2_XXS:
      return iq2_xxs(*lat, b, codes, scales);
    case GgmlType::kIQ2_XS:
      return iq2_xs(*lat, b, codes, scales);
    case GgmlType::kIQ2_S:
      return iq2_s(*lat, b, codes, scales);
    case GgmlType::kIQ3_XXS:
      return iq3_xxs(*lat, b, codes, scales);
    case GgmlType::kIQ3_S:
      return iq3_s(*lat, b, codes, scales);
    case GgmlType::kIQ1_S:
      return iq1_s(*lat, b, codes, scales);
    case GgmlType::kIQ1_M:
      return iq1_m(*lat, b, codes, scales);
    default:
      NBITS_ASSERT(false);
  }
}

}  // namespace nbits::gguf
