// The AVX2 x16 micro-kernels, one implementation per family, parameterised by the
// code width (4 or 8 bits): fgemv / fgemm (CompFp32) and qgemv / qgemm (CompInt8).
// Each named kernel (fgemv_q4x16_avx2, qgemm_q8x16_4x8_avx2, ...) is a one-line
// instantiation in the file of its name. Include only from files compiled with AVX2.
#pragma once

#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels::avx2 {

// What differs between the code widths of the x16 panels.
template <int Bits>
struct X16Width {
  static_assert(Bits == 4 || Bits == 8);
  static constexpr int kPerGroup = Bits == 4 ? 8 : 4;  // k values in one 64-byte code group
  static constexpr int kHalves = Bits == 4 ? 2 : 1;    // code vectors one 32-byte load unpacks to
};

// Software prefetch distance (bytes ahead in the panel stream) of the GEMVs; 4096 measured
// better than 0 and 1024 (bench_matmul_nbits, cold weights).
constexpr int kPrefetchBytes = 4096;

// 32 code bytes -> code vectors in k order: int4 {low nibbles (k 0..3), high nibbles (k 4..7)};
// int8 {the bytes}. Dword i of a vector holds k = 4 * vector + byte of 8 columns.
template <int Bits>
inline void unpack_codes(__m256i x, __m256i* u) {
  if constexpr (Bits == 4) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    u[0] = _mm256_and_si256(x, m4);
    u[1] = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
  } else {
    u[0] = x;
  }
}

// CompFp32 M=1 GEMV: per block, sum a*q in fp32 (codes unpacked with pshufb), then
// y += scale * (sum - zp * sum(a)). Prefetch kPrefetchBytes ahead as the int8 GEMVs do (1.2-1.6x
// with the weights from memory, docs/PERFORMANCE.md).
template <int Bits, bool kAsym, bool kF16>
void fgemv_x16(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
               const float* bias) {
  using W = X16Width<Bits>;
  const int64_t groups = w.block / W::kPerGroup;
  const __m256i sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const float* ab = a + b * w.block;
      __m256 e[4], f[4];
      for (int i = 0; i < 4; ++i) e[i] = f[i] = _mm256_setzero_ps();
      for (int64_t g = 0; g < groups; ++g, codes += 64, ab += W::kPerGroup) {
        _mm_prefetch(reinterpret_cast<const char*>(codes) + kPrefetchBytes, _MM_HINT_T0);
        __m256i u0[2], u1[2];
        unpack_codes<Bits>(load_codes(codes), u0);
        unpack_codes<Bits>(load_codes(codes + 32), u1);
        for (int i = 0; i < 4; ++i)
          for (int h = 0; h < W::kHalves; ++h) {
            const __m256 av = _mm256_set1_ps(ab[i + 4 * h]);
            e[i] = _mm256_fmadd_ps(av, _mm256_cvtepi32_ps(_mm256_shuffle_epi8(u0[h], sel[i])), e[i]);
            f[i] = _mm256_fmadd_ps(av, _mm256_cvtepi32_ps(_mm256_shuffle_epi8(u1[h], sel[i])), f[i]);
          }
      }
      const __m256 as = _mm256_set1_ps(asum[b]);
      const __m256 t0 = _mm256_add_ps(_mm256_add_ps(e[0], e[1]), _mm256_add_ps(e[2], e[3]));
      const __m256 t1 = _mm256_add_ps(_mm256_add_ps(f[0], f[1]), _mm256_add_ps(f[2], f[3]));
      const __m256 z0 = zp_ps<kAsym>(blk + w.zp_offset, w.default_zp());
      const __m256 z1 = zp_ps<kAsym>(blk + w.zp_offset + 8, w.default_zp());
      acc0 = _mm256_fmadd_ps(load_scales8<kF16>(blk, 0), _mm256_fnmadd_ps(z0, as, t0), acc0);
      acc1 = _mm256_fmadd_ps(load_scales8<kF16>(blk, 1), _mm256_fnmadd_ps(z1, as, t1), acc1);
    }
    store16(y, bias, p * 16, w.N, acc0, acc1);
  }
}

// Blocks [b0, b1) of panel p of w dequantized as the reference does, (q - zp) * scale in fp32, into
// out[(k - b0 * block) * 16 + column] (the GEMMs that reuse one dequantized panel for every row).
template <int Bits, bool kAsym, bool kF16>
void dequantize_panel(const PackedX16& w, int64_t p, int64_t b0, int64_t b1, float* out) {
  using W = X16Width<Bits>;
  const int64_t groups = w.block / W::kPerGroup;
  const __m256i sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  const uint8_t* blk = w.panel(p) + b0 * w.block_stride;
  for (int64_t b = b0; b < b1; ++b, blk += w.block_stride) {
    for (int h = 0; h < 2; ++h) {
      const uint8_t* codes = blk + w.header_bytes + 32 * h;
      const __m256 s = load_scales8<kF16>(blk, h);
      const __m256 z = zp_ps<kAsym>(blk + w.zp_offset + 8 * h, w.default_zp());
      float* o = out + (b - b0) * w.block * 16 + 8 * h;
      for (int64_t g = 0; g < groups; ++g, codes += 64) {
        __m256i u[2];
        unpack_codes<Bits>(load_codes(codes), u);
        for (int j = 0; j < W::kPerGroup; ++j, o += 16) {
          const __m256 q = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(u[j >> 2], sel[j & 3]));
          _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_sub_ps(q, z), s));
        }
      }
    }
  }
}

// CompFp32 M>=2 GEMM tile of R rows x 8 columns (half h of panel p): each weight is
// dequantized once, (q - zp) * scale as the reference does, and used for every row.
template <int Bits, int R, bool kAsym, bool kF16>
void fgemm_x16_tile(const PackedX16& w, int64_t p, int h, const float* A, int64_t lda, float* Y, int64_t ldy,
                    const float* bias) {
  using W = X16Width<Bits>;
  const int64_t groups = w.block / W::kPerGroup;
  const __m256i sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    const __m256 s = load_scales8<kF16>(blk, h);
    const __m256 z = zp_ps<kAsym>(blk + w.zp_offset + 8 * h, w.default_zp());
    const float* ab = A + b * w.block;
    for (int64_t g = 0; g < groups; ++g, codes += 64, ab += W::kPerGroup) {
      __m256i u[2];
      unpack_codes<Bits>(load_codes(codes), u);
      for (int j = 0; j < W::kPerGroup; ++j) {
        const __m256 q = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(u[j >> 2], sel[j & 3]));
        const __m256 wv = _mm256_mul_ps(_mm256_sub_ps(q, z), s);
        for (int r = 0; r < R; ++r)
          acc[r][j & 1] = _mm256_fmadd_ps(_mm256_set1_ps(ab[r * lda + j]), wv, acc[r][j & 1]);
      }
    }
  }
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  const int64_t cnt = std::min<int64_t>(8, w.N - n0);
  for (int r = 0; r < R; ++r)
    store8(Y + r * ldy + n0, _mm256_add_ps(acc[r][0], acc[r][1]), bias != nullptr ? bias + n0 : nullptr, cnt);
}

template <int Bits, bool kAsym, bool kF16>
void fgemm_x16(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
               int64_t ldy, const float* bias) {
  for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    fgemm_x16_tile<Bits, decltype(rows)::value, kAsym, kF16>(w, p, h, A + m * lda, lda, Y + m * ldy, ldy,
                                                             bias);
  });
}

// CompInt8 M=1 GEMV: exact int32 block dots, one fp32 lane per output column. int4:
// maddubs(unsigned codes, int8 activations) summed in int16 for kQ4GroupsPerI16 groups;
// int8: codes shifted to q - 128 and the sign trick (maddubs(|w|, sign(a, w))).
template <int Bits, bool kAsym, int kSc>
void qgemv_x16(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* y, const float* bias) {
  using W = X16Width<Bits>;
  constexpr int kOffset = Bits == 4 ? 0 : 128;  // what the dots subtracted from the codes
  const int64_t groups = w.block / W::kPerGroup;
  for (int64_t p = p0; p < p1; ++p) {
    PanelScales<kSc> ps(w, p);
    const uint8_t* blk = w.panel(p);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      ps.enter(b, blk);
      const uint8_t* codes = blk + w.header_bytes;
      const int8_t* q = qa + b * w.block;
      __m256i d0 = _mm256_setzero_si256(), d1 = _mm256_setzero_si256();
      if constexpr (Bits == 4) {
        for (int64_t g0 = 0; g0 < groups; g0 += kQ4GroupsPerI16) {
          __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
          const int64_t g1 = std::min(groups, g0 + kQ4GroupsPerI16);
#pragma GCC unroll 4
          for (int64_t g = g0; g < g1; ++g, codes += 64, q += 8) {
            _mm_prefetch(reinterpret_cast<const char*>(codes) + kPrefetchBytes, _MM_HINT_T0);
            const __m256i alo = bcast4(q), ahi = bcast4(q + 4);
            s0 = _mm256_add_epi16(s0, dot16_q4(load_codes(codes), alo, ahi));
            s1 = _mm256_add_epi16(s1, dot16_q4(load_codes(codes + 32), alo, ahi));
          }
          d0 = _mm256_add_epi32(d0, widen(s0));
          d1 = _mm256_add_epi32(d1, widen(s1));
        }
      } else {
#pragma GCC unroll 4
        for (int64_t g = 0; g < groups; ++g, codes += 64, q += 4) {
          _mm_prefetch(reinterpret_cast<const char*>(codes) + kPrefetchBytes, _MM_HINT_T0);
          const __m256i av = bcast4(q);
          d0 = _mm256_add_epi32(d0, dot_q8s(load_codes(codes), av));
          d1 = _mm256_add_epi32(d1, dot_q8s(load_codes(codes + 32), av));
        }
      }
      d0 = correct<kAsym>(d0, blk + w.zp_offset, w.default_zp(), kOffset, qsum[b]);
      d1 = correct<kAsym>(d1, blk + w.zp_offset + 8, w.default_zp(), kOffset, qsum[b]);
      acc0 = accumulate(acc0, d0, sa[b], ps.scales8(b, blk, 0));
      acc1 = accumulate(acc1, d1, sa[b], ps.scales8(b, blk, 1));
      if (w.has_mins) {
        acc0 = add_min_term(acc0, ps.mins8(b, blk, 0), sa[b], qsum[b]);
        acc1 = add_min_term(acc1, ps.mins8(b, blk, 1), sa[b], qsum[b]);
      }
    }
    store16(y, bias, p * 16, w.N, acc0, acc1);
  }
}

// The int32 dot of every row starts at its zero-point term, -(zp - offset) * qsum,
// so the block's end adds nothing before the conversion.
template <int R, bool kAsym>
inline void init_dots(__m256i* d, const uint8_t* zp, int dflt_zp, int offset, const int32_t* qsum,
                      int64_t kb) {
  if constexpr (kAsym) {
    const __m256i z = _mm256_sub_epi32(_mm256_set1_epi32(offset), load_zp8(zp));
    for (int r = 0; r < R; ++r) d[r] = _mm256_mullo_epi32(z, _mm256_set1_epi32(qsum[r * kb]));
  } else {
    const int z = offset - dflt_zp;
    for (int r = 0; r < R; ++r) d[r] = _mm256_set1_epi32(z * qsum[r * kb]);
  }
}

// CompInt8 int8 M>=2 GEMM tile of R rows x 8 columns (half h of panel p): each code
// group is shifted once and used for every row of the tile.
template <int R, bool kAsym, int kSc>
void qgemm_q8x16_tile8(const PackedX16& w, int64_t p, int h, const int8_t* qa, const float* sa,
                       const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kb = w.k_blocks, kp = kb * w.block, groups = w.block / 4;
  PanelScales<kSc> ps(w, p);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const uint8_t* blk = w.panel(p);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < kb; ++b, blk += w.block_stride) {
    ps.enter(b, blk);
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    const int8_t* q = qa + b * w.block;
    __m256i d[R];  // dots against q - 128
    init_dots<R, kAsym>(d, blk + w.zp_offset + 8 * h, w.default_zp(), 128, qsum + b, kb);
    for (int64_t g = 0; g < groups; ++g, codes += 64, q += 4) {
      const __m256i ws = _mm256_xor_si256(load_codes(codes), flip);  // q - 128 as int8
      const __m256i wabs = _mm256_abs_epi8(ws);
      for (int r = 0; r < R; ++r) {
        const __m256i s16 = _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(bcast4(q + r * kp), ws));
        d[r] = _mm256_add_epi32(d[r], _mm256_madd_epi16(s16, ones));
      }
    }
    const __m256 scales = ps.scales8(b, blk, h);
    for (int r = 0; r < R; ++r) acc[r] = accumulate(acc[r], d[r], sa[r * kb + b], scales);
    if (w.has_mins) {
      const __m256 mins = ps.mins8(b, blk, h);
      for (int r = 0; r < R; ++r) acc[r] = add_min_term(acc[r], mins, sa[r * kb + b], qsum[r * kb + b]);
    }
  }
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  const int64_t cnt = std::min<int64_t>(8, w.N - n0);
  for (int r = 0; r < R; ++r) store8(Y + r * ldy + n0, acc[r], bias != nullptr ? bias + n0 : nullptr, cnt);
}

// The unsigned codes the 16-column CompInt8 tile below feeds to maddubs, in steps of 4 k: step s
// of a block is k = 4s..4s+3 of its 16 columns as two 8-column vectors (dword i = column i).
// offset(): what the steps subtracted from the codes (the zero-point term's offset).
// kI16Steps: steps whose int16 maddubs sums cannot saturate (each pair sum is at most
// 2 x (largest code) x 128 in magnitude). kSigned: the codes are signed int8 (code - offset()), which
// the tile multiplies with the sign trick (maddubs(|c|, sign(a, c))).
struct Q4Steps {  // int4: step s = the low (s even) or high (s odd) nibbles of group s / 2
  static constexpr int kI16Steps = 32767 / (2 * 15 * 128);  // 8
  static constexpr bool kSigned = false;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  static int offset() { return 0; }
  static const uint8_t* group(const uint8_t* codes, int64_t s) { return codes + 64 * (s >> 1); }
  void load(const uint8_t* codes, int64_t s, __m256i& c0, __m256i& c1) const {
    c0 = load_codes(codes + 64 * (s >> 1)), c1 = load_codes(codes + 64 * (s >> 1) + 32);
    if ((s & 1) != 0) c0 = _mm256_srli_epi16(c0, 4), c1 = _mm256_srli_epi16(c1, 4);
    c0 = _mm256_and_si256(c0, m4), c1 = _mm256_and_si256(c1, m4);
  }
};

// int5 panels (PackedX16 bits 5): step s = the int4 step of the low nibbles with bit 4 from the
// block's high-bit plane s / 8 (bit s % 8 of each byte, moved to bit 4 by one 16-bit shift: the
// bits a shift carries across a byte boundary land outside the 0x10 mask).
struct Q5Steps {
  static constexpr int kI16Steps = 32767 / (2 * 31 * 128);  // 4
  static constexpr bool kSigned = false;
  const __m256i m4 = _mm256_set1_epi8(0x0f), b4 = _mm256_set1_epi8(0x10);
  int lo;
  size_t planes;  // high-bit planes' offset from the codes
  explicit Q5Steps(const PackedX16& w) : lo(w.code_lo), planes(w.high_planes_offset() - w.header_bytes) {}
  int offset() const { return lo; }
  static const uint8_t* group(const uint8_t* codes, int64_t s) { return codes + 64 * (s >> 1); }
  static __m256i bit4(__m256i h, int t) {  // immediate shifts once the step loop unrolls
    switch (t) {
      case 0:
        return _mm256_slli_epi16(h, 4);
      case 1:
        return _mm256_slli_epi16(h, 3);
      case 2:
        return _mm256_slli_epi16(h, 2);
      case 3:
        return _mm256_add_epi16(h, h);
      case 4:
        return h;
      case 5:
        return _mm256_srli_epi16(h, 1);
      case 6:
        return _mm256_srli_epi16(h, 2);
      default:
        return _mm256_srli_epi16(h, 3);
    }
  }
  void load(const uint8_t* codes, int64_t s, __m256i& c0, __m256i& c1) const {
    c0 = load_codes(codes + 64 * (s >> 1)), c1 = load_codes(codes + 64 * (s >> 1) + 32);
    if ((s & 1) != 0) c0 = _mm256_srli_epi16(c0, 4), c1 = _mm256_srli_epi16(c1, 4);
    const uint8_t* plane = codes + planes + 64 * (s >> 3);
    const int t = static_cast<int>(s & 7);
    const __m256i h0 = _mm256_and_si256(bit4(load_codes(plane), t), b4);
    const __m256i h1 = _mm256_and_si256(bit4(load_codes(plane + 32), t), b4);
    c0 = _mm256_or_si256(_mm256_and_si256(c0, m4), h0), c1 = _mm256_or_si256(_mm256_and_si256(c1, m4), h1);
  }
};

// int6 panels (PackedX16 bits 6): step s = the int4 step of the low nibbles with bits 4 and 5 from
// the block's high-bit plane s / 4 (bits 2(s % 4) and 2(s % 4) + 1 of each byte, moved to bits 4
// and 5 by one 16-bit shift: what a shift carries across a byte boundary lands outside the 0x30
// mask).
struct Q6Steps {
  static constexpr int kI16Steps = 32767 / (2 * 63 * 128);  // 2
  static constexpr bool kSigned = false;
  const __m256i m4 = _mm256_set1_epi8(0x0f), b45 = _mm256_set1_epi8(0x30);
  int lo;
  size_t planes;  // high-bit planes' offset from the codes
  explicit Q6Steps(const PackedX16& w) : lo(w.code_lo), planes(w.high_planes_offset() - w.header_bytes) {}
  int offset() const { return lo; }
  static const uint8_t* group(const uint8_t* codes, int64_t s) { return codes + 64 * (s >> 1); }
  static __m256i bits45(__m256i h, int t) {  // immediate shifts once the step loop unrolls
    switch (t) {
      case 0:
        return _mm256_slli_epi16(h, 4);
      case 1:
        return _mm256_slli_epi16(h, 2);
      case 2:
        return h;
      default:
        return _mm256_srli_epi16(h, 2);
    }
  }
  void load(const uint8_t* codes, int64_t s, __m256i& c0, __m256i& c1) const {
    c0 = load_codes(codes + 64 * (s >> 1)), c1 = load_codes(codes + 64 * (s >> 1) + 32);
    if ((s & 1) != 0) c0 = _mm256_srli_epi16(c0, 4), c1 = _mm256_srli_epi16(c1, 4);
    const uint8_t* plane = codes + planes + 64 * (s >> 2);
    const int t = static_cast<int>(s & 3);
    const __m256i h0 = _mm256_and_si256(bits45(load_codes(plane), t), b45);
    const __m256i h1 = _mm256_and_si256(bits45(load_codes(plane + 32), t), b45);
    c0 = _mm256_or_si256(_mm256_and_si256(c0, m4), h0), c1 = _mm256_or_si256(_mm256_and_si256(c1, m4), h1);
  }
};

// lut4 panels (PackedX16::lut4: GGUF MXFP4 / NVFP4's e2m1 levels, IQ4_NL / IQ4_XS's levels, the IQ
// lattices): step s = the int4 step's indices looked up with one pshufb (the table in both lanes).
// A table whose codes span fewer than kSpanBits bits (5, 6 or 7) gives unsigned lut[index] - code_lo
// (int16 sums for 4, 2 or 1 steps: NarrowQ8Steps' bounds); kSpanBits 8 (IQ4_NL's 1..241) gives
// signed lut[index] - 128, which the tile multiplies with the sign trick, one step per int16 sum.
template <int kSpanBits>
struct Lut4Steps {
  static_assert(kSpanBits >= 5 && kSpanBits <= 8);
  static constexpr bool kSigned = kSpanBits == 8;
  static constexpr int kI16Steps = kSigned ? 1 : 32767 / (2 * ((1 << kSpanBits) - 1) * 128);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256i table;
  int lo;
  explicit Lut4Steps(const PackedX16& w) : lo(kSigned ? 128 : w.code_lo) {
    alignas(16) uint8_t t[16];
    for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(w.lut[i] - lo);
    table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  }
  int offset() const { return lo; }
  static const uint8_t* group(const uint8_t* codes, int64_t s) { return codes + 64 * (s >> 1); }
  void load(const uint8_t* codes, int64_t s, __m256i& c0, __m256i& c1) const {
    c0 = load_codes(codes + 64 * (s >> 1)), c1 = load_codes(codes + 64 * (s >> 1) + 32);
    if ((s & 1) != 0) c0 = _mm256_srli_epi16(c0, 4), c1 = _mm256_srli_epi16(c1, 4);
    c0 = _mm256_shuffle_epi8(table, _mm256_and_si256(c0, m4));
    c1 = _mm256_shuffle_epi8(table, _mm256_and_si256(c1, m4));
  }
};

// int8 codes that span fewer than kSpanBits bits (PackedX16::code_lo / code_hi: GGUF Q5_0, Q5_1,
// Q5_K, Q6_K, MXFP4 held as 8-bit codes): step s = group s minus code_lo, unsigned below
// 2^kSpanBits (the zero padding wraps to larger values in lanes no row keeps: columns past N,
// or k past K where the activations are 0).
template <int kSpanBits>
struct NarrowQ8Steps {
  static_assert(kSpanBits >= 5 && kSpanBits <= 7);
  static constexpr int kI16Steps = 32767 / (2 * ((1 << kSpanBits) - 1) * 128);  // 5: 4, 6: 2, 7: 1
  static constexpr bool kSigned = false;
  int lo;
  __m256i vlo;
  explicit NarrowQ8Steps(int code_lo) : lo(code_lo), vlo(_mm256_set1_epi8(static_cast<char>(code_lo))) {}
  int offset() const { return lo; }
  static const uint8_t* group(const uint8_t* codes, int64_t s) { return codes + 64 * s; }
  void load(const uint8_t* codes, int64_t s, __m256i& c0, __m256i& c1) const {
    c0 = _mm256_sub_epi8(load_codes(codes + 64 * s), vlo);
    c1 = _mm256_sub_epi8(load_codes(codes + 64 * s + 32), vlo);
  }
};

// CompInt8 M>=1 GEMM tile of R rows x the panel's 16 columns on unsigned code steps (Q4Steps,
// NarrowQ8Steps): each step's codes are loaded once for the R rows, and both 8-column halves
// share each row's activation broadcast; the fp32 accumulators live in memory, touched once per
// block. S > 0: the block's steps (block / 4) known at compile time, so the loops unroll and a
// block's int16 sums never leave registers (S = 0: any block size, counted at run time).
template <int R, int S, class Steps, bool kAsym, int kSc>
void qgemm_steps_tile16(const PackedX16& w, int64_t p, const Steps& st, bool stream, const int8_t* qa,
                        const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  constexpr int kRun = Steps::kI16Steps;
  const int64_t kb = w.k_blocks, kp = kb * w.block, steps = S > 0 ? S : w.block / 4;
  PanelScales<kSc> ps(w, p);
  alignas(32) float acc[R][16] = {};
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < kb; ++b, blk += w.block_stride) {
    ps.enter(b, blk);
    const uint8_t* codes = blk + w.header_bytes;
    const int8_t* q = qa + b * w.block;
    if (stream) _mm_prefetch(reinterpret_cast<const char*>(blk) + kPrefetchBytes, _MM_HINT_T0);
    __m256i d0[R], d1[R];
    for (int r = 0; r < R; ++r) d0[r] = d1[r] = _mm256_setzero_si256();
    for (int64_t s0 = 0; s0 < steps; s0 += kRun) {
      __m256i s16a[R], s16b[R];
      // The first step of a run sets the int16 sums; the others add with saturating adds (they
      // never saturate: kI16Steps) that GCC cannot reassociate.
      const auto step = [&](int64_t s, auto first) {
        if (stream)
          _mm_prefetch(reinterpret_cast<const char*>(Steps::group(codes, s)) + kPrefetchBytes, _MM_HINT_T0);
        __m256i c0, c1;
        st.load(codes, s, c0, c1);
        // Signed codes: |c| against the activations given c's sign (the int8 kernels' sign trick).
        const __m256i u0 = Steps::kSigned ? _mm256_abs_epi8(c0) : c0,
                      u1 = Steps::kSigned ? _mm256_abs_epi8(c1) : c1;
        for (int r = 0; r < R; ++r) {
          const __m256i a = bcast4(q + r * kp + 4 * s);
          const __m256i a0 = Steps::kSigned ? _mm256_sign_epi8(a, c0) : a,
                        a1 = Steps::kSigned ? _mm256_sign_epi8(a, c1) : a;
          const __m256i m0 = _mm256_maddubs_epi16(u0, a0), m1 = _mm256_maddubs_epi16(u1, a1);
          if constexpr (decltype(first)::value) {
            s16a[r] = m0, s16b[r] = m1;
          } else {
            s16a[r] = _mm256_adds_epi16(s16a[r], m0), s16b[r] = _mm256_adds_epi16(s16b[r], m1);
          }
        }
      };
      step(s0, std::true_type{});
      const int64_t s1 = std::min<int64_t>(steps, s0 + kRun);
      for (int64_t s = s0 + 1; s < s1; ++s) step(s, std::false_type{});
      for (int r = 0; r < R; ++r) {
        d0[r] = _mm256_add_epi32(d0[r], widen(s16a[r]));
        d1[r] = _mm256_add_epi32(d1[r], widen(s16b[r]));
      }
    }
    // The zero-point term, -(zp - offset) * qsum per row, added to the exact dots.
    __m256i z0[R], z1[R];
    init_dots<R, kAsym>(z0, blk + w.zp_offset, w.default_zp(), st.offset(), qsum + b, kb);
    init_dots<R, kAsym>(z1, blk + w.zp_offset + 8, w.default_zp(), st.offset(), qsum + b, kb);
    const __m256 sc0 = ps.scales8(b, blk, 0), sc1 = ps.scales8(b, blk, 1);
    __m256 mn0 = sc0, mn1 = sc1;
    if (w.has_mins) mn0 = ps.mins8(b, blk, 0), mn1 = ps.mins8(b, blk, 1);
    for (int r = 0; r < R; ++r) {
      __m256 a0 = accumulate(_mm256_load_ps(acc[r]), _mm256_add_epi32(d0[r], z0[r]), sa[r * kb + b], sc0);
      __m256 a1 = accumulate(_mm256_load_ps(acc[r] + 8), _mm256_add_epi32(d1[r], z1[r]), sa[r * kb + b], sc1);
      if (w.has_mins) {
        a0 = add_min_term(a0, mn0, sa[r * kb + b], qsum[r * kb + b]);
        a1 = add_min_term(a1, mn1, sa[r * kb + b], qsum[r * kb + b]);
      }
      _mm256_store_ps(acc[r], a0);
      _mm256_store_ps(acc[r] + 8, a1);
    }
  }
  const int64_t n0 = p * 16;
  for (int r = 0; r < R; ++r)
    store16(Y + r * ldy, bias, n0, w.N, _mm256_load_ps(acc[r]), _mm256_load_ps(acc[r] + 8));
}

// The steps GEMM over panels [p0, p1) in row tiles of 4, the tile compiled for S steps per block.
template <int S, class Steps, bool kAsym, int kSc>
void qgemm_steps_panels(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const Steps& st,
                        const int8_t* qa, const float* sa, const int32_t* qsum, float* Y, int64_t ldy,
                        const float* bias) {
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  // One row tile (decode, verify steps): each weight is read once, from memory, so prefetch
  // kPrefetchBytes ahead as the GEMVs do (1.2-1.5x on 2-4 rows of int4 / int5, cold weights); more
  // rows re-read each panel from cache for every row tile.
  const bool stream = M <= 4;
  for (int64_t p = p0; p < p1; ++p)
    for_each_row_tile<4>(M, [&](int64_t m, auto rows) {
      qgemm_steps_tile16<decltype(rows)::value, S, Steps, kAsym, kSc>(
          w, p, st, stream, qa + m * kp, sa + m * kb, qsum + m * kb, Y + m * ldy, ldy, bias);
    });
}

// The steps GEMM with unrolled tiles for blocks of 16, 32 (onnxruntime-genai's and GGUF's), 64
// and 128.
template <class Steps, bool kAsym, int kSc>
void qgemm_steps(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const Steps& st, const int8_t* qa,
                 const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  switch (w.block) {
    case 16:
      return qgemm_steps_panels<4, Steps, kAsym, kSc>(w, p0, p1, M, st, qa, sa, qsum, Y, ldy, bias);
    case 32:
      return qgemm_steps_panels<8, Steps, kAsym, kSc>(w, p0, p1, M, st, qa, sa, qsum, Y, ldy, bias);
    case 64:
      return qgemm_steps_panels<16, Steps, kAsym, kSc>(w, p0, p1, M, st, qa, sa, qsum, Y, ldy, bias);
    case 128:
      return qgemm_steps_panels<32, Steps, kAsym, kSc>(w, p0, p1, M, st, qa, sa, qsum, Y, ldy, bias);
    default:
      return qgemm_steps_panels<0, Steps, kAsym, kSc>(w, p0, p1, M, st, qa, sa, qsum, Y, ldy, bias);
  }
}

// CompInt8 M>=2 GEMM: int4 in tiles of 4 rows x 16 columns, int8 in 4 x 8.
template <int Bits, bool kAsym, int kSc>
void qgemm_x16(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  if constexpr (Bits == 4) {
    qgemm_steps<Q4Steps, kAsym, kSc>(w, p0, p1, M, Q4Steps{}, qa, sa, qsum, Y, ldy, bias);
  } else {
    for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
      qgemm_q8x16_tile8<decltype(rows)::value, kAsym, kSc>(w, p, h, qa + m * kp, sa + m * kb, qsum + m * kb,
                                                           Y + m * ldy, ldy, bias);
    });
  }
}

// The x86 V of kernels/fgemm_x16_dequant_inl.h over fp32 vector basics F (x86::F32Ymm / F32Zmm,
// kernels/x86/f32_vec_inl.h): 2 vectors per tile row, this file's dequantization and 4x8 GEMM.
template <class F>
struct DequantGemmV : F {
  static constexpr int kTileVecs = 2;
  template <int Bits, bool kAsym, bool kF16>
  static void dequantize_panel(const PackedX16& w, int64_t p, int64_t b0, int64_t b1, float* out) {
    avx2::dequantize_panel<Bits, kAsym, kF16>(w, p, b0, b1, out);
  }
  template <int Bits, bool kAsym, bool kF16>
  static void small_gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                         float* Y, int64_t ldy, const float* bias) {
    fgemm_x16<Bits, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
  }
};

}  // namespace nbits::kernels::avx2
