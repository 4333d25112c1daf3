// CompInt8 GEMM (M >= 16) with AMX-INT8 (tdpbssd) on int4 and int8 x16 panels without stored
// zero points (none, or all equal and folded; block mins added after each block's term):
// the tile unit multiplies 16 rows of int8 activations by 16 columns of int8 weights, K up
// to 64 per instruction, into a 16 x 16 int32 tile.
//
// * Weights: each panel is unpacked once per call into a per-thread scratch of signed int8
//   codes (code - default_zp) in the tile's B layout: one 64-byte row per 4 values of K, 16
//   columns x 4 values, which is exactly the x16 code group (int8) or its low / high nibbles
//   (int4). Every 16-row tile of A then reuses it from L1 / L2.
// * Activations: the driver's quantized rows are the A tiles as they are (stride k_blocks *
//   block bytes).
// * Per weight block one C tile holds the exact int32 dots, the same integers as the reference's
//   sum(qa * (code - zp)); the fp32 epilogue (acc += float(dot) * (sa * scale), the reference
//   order) then reads them back from memory. Measured on a Sapphire Rapids class core, what
//   decides the speed is how the tile stores and that epilogue overlap: block b runs on C tile
//   b % 4 into its own 1 KiB buffer, and the epilogue of block b - 2 follows, so no vector load
//   reads a tile store in flight or aliases the latest one modulo 4 KiB, and 16 fp32
//   accumulators stay in registers. (A 2 x 2 tile of 32 x 32 outputs with the accumulators in
//   memory ran no faster than the VNNI kernel; other variants: docs/PERFORMANCE.md, "AMX-INT8".)
//   The epilogue's 4 vector operations per 16 outputs and block are the limit: per-block zero
//   points (2 more) made this kernel no faster than VNNI, so those weights stay there.
// * Rows past the last whole 16-row tile run on the VNNI tile kernel: bit-identical numerics.
// GCC 12 reports _mm512_undefined_ps() (inside _mm512_cvtepi32_ps, _mm512_cvtph_ps) as
// maybe-uninitialized (uninitialized once inlined into the epilogue): a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/panel_prefetch.h"
#include "kernels/x86/amx_tile_config.h"
#include "kernels/x86/x16_amx.h"
#include "kernels/x86/x16_avx512_inl.h"
#include "kernels/x86/x16_vnni.h"

namespace nbits::kernels {
namespace {
using namespace x16_avx512;  // NOLINT(google-build-using-namespace): the shared helpers

// Blocks between a block's tile store and its epilogue (1..3: four C tiles and buffers). 1, 2 and
// 3 measured alike; 2 leaves the most slack either way.
constexpr int kLag = 2;

// Tile numbers: C tiles 0..3 (block b on b % 4), A tiles 4, 5 and B tiles 6, 7 (b % 2).
// kt: K values per tile product (min(block, 64)); A tiles 16 x kt bytes, B tiles kt / 4 x 64.
void configure(int kt) {
  AmxTileConfig c;
  for (int t = 0; t < 4; ++t) c.rows[t] = 16, c.colsb[t] = 64;
  for (int t = 4; t < 6; ++t) c.rows[t] = 16, c.colsb[t] = static_cast<uint16_t>(kt);
  for (int t = 6; t < 8; ++t) c.rows[t] = static_cast<uint8_t>(kt / 4), c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

// Signed codes of panel p (all of K) as B-tile rows of 64 bytes: row k / 4 holds k .. k + 3 of
// the 16 columns. int4: group g of a block (8 values) gives rows 2g (low nibbles) and 2g + 1.
template <int kBits>
void unpack_panel(const PackedX16& w, int64_t p, int8_t* dst) {
  const __m512i zp = _mm512_set1_epi8(static_cast<char>(w.default_zp()));
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const uint8_t* blk = w.panel(p);
  const int64_t groups = w.block / w.group_k();
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes;
    for (int64_t g = 0; g < groups; ++g, codes += 64) {
      const __m512i x = _mm512_loadu_si512(codes);
      if constexpr (kBits == 4) {
        _mm512_storeu_si512(dst, _mm512_sub_epi8(_mm512_and_si512(x, m4), zp));
        _mm512_storeu_si512(dst + 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(x, 4), m4), zp));
        dst += 128;
      } else {
        _mm512_storeu_si512(dst, _mm512_sub_epi8(x, zp));
        dst += 64;
      }
    }
  }
}

// One block's tile work on C tile T (A tile TA, B tile TB): zero, the block's K chunks, store.
#define NBITS_AMX_BLOCK(T, TA, TB)           \
  do {                                       \
    _tile_zero(T);                           \
    for (int64_t c = 0; c < chunks; ++c) {   \
      const int64_t k0 = b * block + c * kt; \
      _tile_loadd(TA, qa + k0, kp);          \
      _tile_loadd(TB, codes + k0 * 16, 64);  \
      _tile_dpbssd(T, TA, TB);               \
    }                                        \
    _tile_stored(T, cbuf[T], 64);            \
  } while (0)

// Rows [0, 16) (qa rows kp bytes apart, sa rows k_blocks apart) x panel p, whose signed codes
// are `codes`: every K block, then Y. Block b runs on C tile b % 4 and its int32 dots are stored
// to cbuf[b % 4]; the fp32 epilogue of block b - 2 follows, from a buffer whose tile store was
// issued two blocks before (no load waits on a store in flight, and none of the last store's
// 1 KiB aliases it modulo 4 KiB). The 16 accumulators stay in registers. (Also measured, no
// faster: the epilogue before the store in program order; the next block's tile loads issued a
// block ahead; K in 16 KiB steps so that the B codes stay in L1; prefetching the next panel.)
template <bool kF16, bool kMins>
void tile16(const PackedX16& w, int64_t p, const int8_t* qa, const float* sa, const int32_t* qsum,
            const int8_t* codes, float* Y, int64_t ldy, const float* bias) {
  const int64_t kb = w.k_blocks, block = w.block, kp = kb * block;
  const int kt = static_cast<int>(std::min<int64_t>(block, 64));
  const int64_t chunks = block / kt;
  alignas(64) int32_t cbuf[4][16][16];
  const int64_t n0 = p * 16;
  const int64_t cnt = std::min<int64_t>(16, w.N - n0);
  const __mmask16 mask = static_cast<__mmask16>((1u << cnt) - 1);
  __m512 acc[16];
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
  const uint8_t* blk0 = w.panel(p);
  // The fp32 epilogue of block e (a loop over e, not a lambda, so that the accumulators stay in
  // registers: GCC keeps an array captured by reference in memory).
  for (int64_t b = 0, e = -kLag; e < kb; ++b, ++e) {
    if (b < kb) {
      switch (b & 3) {
        case 0:
          NBITS_AMX_BLOCK(0, 4, 6);
          break;
        case 1:
          NBITS_AMX_BLOCK(1, 5, 7);
          break;
        case 2:
          NBITS_AMX_BLOCK(2, 4, 6);
          break;
        default:
          NBITS_AMX_BLOCK(3, 5, 7);
          break;
      }
    }
    if (e >= 0) {
      const __m512 scales = load_scales16<kF16>(blk0 + e * w.block_stride);
      const int32_t(*c)[16] = cbuf[e & 3];
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r)
        acc[r] = accumulate(acc[r], _mm512_load_si512(c[r]), sa[r * kb + e], scales);
      if constexpr (kMins) {  // after each block's term, as the reference adds it
        const __m512 mins =
            _mm512_loadu_ps(reinterpret_cast<const float*>(blk0 + e * w.block_stride + w.mins_offset));
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) acc[r] = add_min_term(acc[r], mins, sa[r * kb + e], qsum[r * kb + e]);
      }
    }
  }
  const bool add_bias = bias != nullptr;
  const __m512 bv = add_bias ? _mm512_maskz_loadu_ps(mask, bias + n0) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r)
    _mm512_mask_storeu_ps(Y + r * ldy + n0, mask, add_bias ? _mm512_add_ps(acc[r], bv) : acc[r]);
}
#undef NBITS_AMX_BLOCK

template <int kBits, bool kF16>
void run(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
         const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kb = w.k_blocks, kp = kb * w.block;
  const auto vnni = kBits == 4 ? qgemm_q4x16_avx512vnni<false, kF16> : qgemm_q8x16_avx512vnni<false, kF16>;
  const int64_t mt = M / 16 * 16;  // rows on the tile unit
  if (mt > 0) {
    configure(static_cast<int>(std::min<int64_t>(w.block, 64)));
    thread_local std::vector<int8_t> scratch;  // no allocation after the largest K seen
    if (scratch.size() < static_cast<size_t>(kp) * 16) scratch.resize(static_cast<size_t>(kp) * 16);
    for (int64_t p = p0; p < p1; ++p) {
      unpack_panel<kBits>(w, p, scratch.data());
      const uint8_t* next = p + 1 < p1 ? w.panel(p + 1) : nullptr;  // read once: from DRAM
      for (int64_t m = 0; m < mt; m += 16) {
        prefetch_slice(next, w.panel_stride, m / 16, mt / 16);
        const auto tile = w.has_mins ? tile16<kF16, true> : tile16<kF16, false>;
        tile(w, p, qa + m * kp, sa + m * kb, qsum + m * kb, scratch.data(), Y + m * ldy, ldy, bias);
      }
    }
    _tile_release();
  }
  // Rows past the last whole 16-row tile on the VNNI tile.
  if (mt < M) vnni(w, p0, p1, M - mt, qa + mt * kp, sa + mt * kb, qsum + mt * kb, Y + mt * ldy, ldy, bias);
}

}  // namespace

template <bool kF16>
void qgemm_q4x16_amx(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  run<4, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kF16>
void qgemm_q8x16_amx(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  run<8, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

template void qgemm_q4x16_amx<false>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*, const float*,
                                     const int32_t*, float*, int64_t, const float*);
template void qgemm_q4x16_amx<true>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*, const float*,
                                    const int32_t*, float*, int64_t, const float*);
template void qgemm_q8x16_amx<false>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*, const float*,
                                     const int32_t*, float*, int64_t, const float*);
template void qgemm_q8x16_amx<true>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*, const float*,
                                    const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
