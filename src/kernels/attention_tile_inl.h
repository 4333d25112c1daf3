// The flash-attention tile, written once over a small vector abstraction V (include only from the
// files that instantiate it: kernels/attention.cc for the portable lanes, kernels/x86/attention_*.cc
// for AVX2 and AVX-512). A tile is up to 2 vectors of query rows (the query heads of one kv head at a
// few positions), held transposed (Qt: H x rows), so every product runs across query rows: scores
// St[j][r] = K_j . q_r and the output Ot[i][r] += V[j][i] * P[j][r] are broadcast-FMAs over a
// register block of keys (or of head columns) by row vectors, with no horizontal sums, and the
// online softmax (running max and sum per row) is elementwise over the same vectors.
//
// V provides: R (the register type), kLanes, kAcc (accumulators a register block may use), zero(),
// set1(float), load(const float*), store(float*, R), fmadd(a, b, c) = a * b + c, add, sub, mul, max,
// exp (exp(-inf) = 0), lt_select(a, b, x, y) = a < b ? x : y, widen(const uint16_t*, float*, n) and
// widen_q8(const int8_t* rows, float*, nrows, H) (int8 cache rows of kernels/attention.h, dequantized).
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nbits::kernels::attn {

constexpr int kMaxTileRows = 32;        // query rows of one tile at most (2 vectors of 16 lanes)
constexpr int64_t kMaxHead = 512;       // longest head the tile buffers hold
constexpr int64_t kBlockFloats = 8192;  // K (or V) block: 32 KiB of fp32 at most

constexpr float kExpFloorTile = -80.0f;  // exp(-80) = 1.8e-35: far below a sum holding exp(0) = 1

// Keys per block: a K block and a V block of H floats each stay in L1/L2 across the tile.
inline int64_t key_block(int64_t H) { return std::clamp<int64_t>(kBlockFloats / H, 8, 64); }

// Elements of T one cache row of head H takes: H (fp32, fp16), H codes + the 4-byte scale (int8).
template <typename T>
constexpr int64_t row_elems(int64_t H) {
  return std::is_same_v<T, int8_t> ? H + 4 : H;
}

// The ISAs' V::widen_q8: per int8 row (H codes, then the scale), cvt(codes, scale, out) converts L
// codes at a time to code * scale, the tail one by one (the same product).
template <int L, typename Cvt>
inline void widen_q8_rows(const int8_t* rows, float* f, int64_t nrows, int64_t H, Cvt cvt) {
  for (int64_t r = 0; r < nrows; ++r, f += H) {
    const int8_t* c = rows + r * (H + 4);
    float scale;
    std::memcpy(&scale, c + H, sizeof scale);
    int64_t i = 0;
    for (; i + L <= H; i += L) cvt(c + i, scale, f + i);
    for (; i < H; ++i) f[i] = static_cast<float>(c[i]) * scale;
  }
}

// The nb rows from row j0 of X as floats: X itself (fp32), or widened / dequantized into buf.
template <class V, typename T>
inline const float* block_rows(const T* X, int64_t j0, int64_t nb, int64_t H, float* buf) {
  if constexpr (std::is_same_v<T, float>) {
    return X + j0 * H;
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    V::widen(X + j0 * H, buf, nb * H);
    return buf;
  } else {
    static_assert(std::is_same_v<T, int8_t>);
    V::widen_q8(X + j0 * (H + 4), buf, nb, H);
    return buf;
  }
}

// One tile's buffers. Rows r >= the real rows are padding (lo = hi = 0: they see no key).
struct Tile {
  int64_t H = 0;
  const float* qt = nullptr;       // [H][rows_pad]: the scaled queries, transposed
  const float* lo = nullptr;       // [rows_pad]: first key a row sees (as a float)
  const float* hi = nullptr;       // [rows_pad]: one past its last key
  int64_t lo_max = 0, hi_min = 0;  // every real row sees [lo_max, hi_min) (no mask there)
  float* ot = nullptr;             // [H][rows_pad]: unnormalised output, transposed
  float* m = nullptr;              // [rows_pad]: running max of the scores (-FLT_MAX: none yet)
  float* l = nullptr;              // [rows_pad]: sum of exp(score - m)
  float* s = nullptr;              // [key_block(H)][rows_pad] scratch: scores, then probabilities
  float* kb = nullptr;             // [kBlockFloats] scratch: a widened fp16 / int8 K block
  float* vb = nullptr;             // [kBlockFloats] scratch: a widened fp16 / int8 V block
};

// St[r][.] for JR keys k + r * H: JR x NV accumulators, one query column load per h shared by them.
template <class V, int NV, int JR>
inline void score_keys(const float* qt, const float* k, int64_t H, float* s) {
  using R = typename V::R;
  constexpr int L = V::kLanes, MP = NV * L;
  R acc[JR][NV];
  for (int r = 0; r < JR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
  for (int64_t h = 0; h < H; ++h) {
    R q[NV];
    for (int v = 0; v < NV; ++v) q[v] = V::load(qt + h * MP + v * L);
    for (int r = 0; r < JR; ++r) {
      const R kv = V::set1(k[r * H + h]);
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(kv, q[v], acc[r][v]);
    }
  }
  for (int r = 0; r < JR; ++r)
    for (int v = 0; v < NV; ++v) V::store(s + r * MP + v * L, acc[r][v]);
}

// Ot[i0 + c] = alpha * Ot[i0 + c] + sum_j V[j][i0 + c] * P[j], c < IC: IC x NV accumulators.
template <class V, int NV, int IC>
inline void accumulate_cols(const float* vp, int64_t nb, int64_t H, int64_t i0, const float* P,
                            const typename V::R* alpha, float* ot) {
  using R = typename V::R;
  constexpr int L = V::kLanes, MP = NV * L;
  R acc[IC][NV];
  for (int c = 0; c < IC; ++c)
    for (int v = 0; v < NV; ++v) acc[c][v] = V::mul(V::load(ot + (i0 + c) * MP + v * L), alpha[v]);
  for (int64_t j = 0; j < nb; ++j) {
    R p[NV];
    for (int v = 0; v < NV; ++v) p[v] = V::load(P + j * MP + v * L);
    for (int c = 0; c < IC; ++c) {
      const R x = V::set1(vp[j * H + i0 + c]);
      for (int v = 0; v < NV; ++v) acc[c][v] = V::fmadd(x, p[v], acc[c][v]);
    }
  }
  for (int c = 0; c < IC; ++c)
    for (int v = 0; v < NV; ++v) V::store(ot + (i0 + c) * MP + v * L, acc[c][v]);
}

// The tile over keys [jb, je) (each row further limited to its [lo, hi)): t.ot, t.m, t.l from zero.
template <class V, int NV, typename T>
void run_tile(const Tile& t, const T* K, const T* Vr, int64_t jb, int64_t je, float softcap) {
  using R = typename V::R;
  constexpr int L = V::kLanes, MP = NV * L;
  constexpr int JR = std::max(1, V::kAcc / NV), IC = std::max(1, V::kAcc / NV);
  const int64_t H = t.H, Bc = key_block(H);
  const R ninf = V::set1(-INFINITY);
  R m[NV], l[NV], lo[NV], hi[NV];
  for (int v = 0; v < NV; ++v) {
    m[v] = V::set1(-FLT_MAX);
    l[v] = V::zero();
    lo[v] = V::load(t.lo + v * L);
    hi[v] = V::load(t.hi + v * L);
  }
  for (int64_t i = 0; i < H * MP; i += L) V::store(t.ot + i, V::zero());
  for (int64_t j0 = jb; j0 < je; j0 += Bc) {
    const int64_t nb = std::min(Bc, je - j0);
    const float* kp = block_rows<V>(K, j0, nb, H, t.kb);
    const float* vp = block_rows<V>(Vr, j0, nb, H, t.vb);
    int64_t j = 0;
    for (; j + JR <= nb; j += JR) score_keys<V, NV, JR>(t.qt, kp + j * H, H, t.s + j * MP);
    for (; j + 4 <= nb; j += 4) score_keys<V, NV, 4>(t.qt, kp + j * H, H, t.s + j * MP);
    for (; j < nb; ++j) score_keys<V, NV, 1>(t.qt, kp + j * H, H, t.s + j * MP);
    if (softcap > 0.0f)
      for (int64_t i = 0; i < nb * MP; ++i) t.s[i] = softcap * std::tanh(t.s[i] / softcap);
    // Mask (only in blocks some row does not fully see) and the block max per row.
    R bm[NV];
    for (int v = 0; v < NV; ++v) bm[v] = ninf;
    const bool full = j0 >= t.lo_max && j0 + nb <= t.hi_min;
    for (j = 0; j < nb; ++j) {
      const R key = V::set1(static_cast<float>(j0 + j));
      for (int v = 0; v < NV; ++v) {
        R x = V::load(t.s + j * MP + v * L);
        if (!full) {
          x = V::lt_select(key, lo[v], ninf, x);
          x = V::lt_select(key, hi[v], x, ninf);
          V::store(t.s + j * MP + v * L, x);
        }
        bm[v] = V::max(bm[v], x);
      }
    }
    // exp below kExpFloorTile taken as 0: a subnormal result (the masked lanes' exp(-inf), a first
    // block's rescale exp(-FLT_MAX - m)) costs an x86 microcode assist each, ~100x the vector op.
    const R lowest = V::set1(kExpFloorTile), zero = V::zero();
    R alpha[NV], sum[NV];
    for (int v = 0; v < NV; ++v) {
      const R mn = V::max(m[v], bm[v]);
      const R x = V::sub(m[v], mn);
      alpha[v] = V::lt_select(x, lowest, zero, V::exp(V::max(x, lowest)));
      m[v] = mn;
      sum[v] = V::zero();
    }
    for (j = 0; j < nb; ++j)
      for (int v = 0; v < NV; ++v) {
        const R x = V::sub(V::load(t.s + j * MP + v * L), m[v]);
        const R e = V::lt_select(x, lowest, zero, V::exp(V::max(x, lowest)));
        V::store(t.s + j * MP + v * L, e);
        sum[v] = V::add(sum[v], e);
      }
    for (int v = 0; v < NV; ++v) l[v] = V::fmadd(l[v], alpha[v], sum[v]);
    int64_t i = 0;
    for (; i + IC <= H; i += IC) accumulate_cols<V, NV, IC>(vp, nb, H, i, t.s, alpha, t.ot);
    for (; i + 4 <= H; i += 4) accumulate_cols<V, NV, 4>(vp, nb, H, i, t.s, alpha, t.ot);
    for (; i < H; ++i) accumulate_cols<V, NV, 1>(vp, nb, H, i, t.s, alpha, t.ot);
  }
  for (int v = 0; v < NV; ++v) {
    V::store(t.m + v * L, m[v]);
    V::store(t.l + v * L, l[v]);
  }
}

// The entry points one ISA provides: [NV - 1] runs a tile of NV vectors of rows.
struct TileKernels {
  const char* isa;
  int lanes;
  void (*f32[2])(const Tile&, const float*, const float*, int64_t, int64_t, float);
  void (*f16[2])(const Tile&, const uint16_t*, const uint16_t*, int64_t, int64_t, float);
  void (*q8[2])(const Tile&, const int8_t*, const int8_t*, int64_t, int64_t, float);
};

template <class V>
TileKernels tile_kernels(const char* isa) {
  return {isa,
          V::kLanes,
          {run_tile<V, 1, float>, run_tile<V, 2, float>},
          {run_tile<V, 1, uint16_t>, run_tile<V, 2, uint16_t>},
          {run_tile<V, 1, int8_t>, run_tile<V, 2, int8_t>}};
}

}  // namespace nbits::kernels::attn
