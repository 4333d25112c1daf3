#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/cpu_features.h"
#include "base/error.h"
#include "base/fp16.h"
#include "kernels/attention_decode_inl.h"
#include "kernels/attention_tile_inl.h"
#include "kernels/vector_ops.h"
#if defined(NBITS_ARCH_X86)
#include "kernels/x86/attention_x86.h"
#include "kernels/x86/built_sets.h"
#endif
#if defined(NBITS_ARCH_RISCV)
#include "kernels/rvv/attention_rvv.h"
#endif
#if defined(NBITS_ARCH_ARM64)
#include "kernels/arm64/attention_neon.h"
#endif

namespace nbits::kernels {
namespace {

// Asks for the cache lines of [p, p + count) to be fetched (no-op on compilers without the builtin).
template <typename T>
inline void prefetch(const T* p, int64_t count) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t b = 0; b < count * static_cast<int64_t>(sizeof(T)); b += 64) __builtin_prefetch(c + b, 0, 3);
}

inline void dot_rows(const float* x, int64_t nx, int64_t xs, const float* M, int64_t rows, int64_t n,
                     float alpha, float* y, int64_t ys) {
  vec_dot_rows(x, nx, xs, M, rows, n, alpha, y, ys);
}
inline void dot_rows(const float* x, int64_t nx, int64_t xs, const uint16_t* M, int64_t rows, int64_t n,
                     float alpha, float* y, int64_t ys) {
  vec_dot_rows_f16(x, nx, xs, M, rows, n, alpha, y, ys);
}
// int8 rows (kv_q8_row_bytes(n) apart): dequantized into a per-thread block first (attend's blocks
// hold at most 4096 values at head <= 512), then the fp32 helpers.
constexpr int64_t kQ8BlockFloats = 4096;
inline const float* dequantize_rows(const int8_t* M, int64_t rows, int64_t n) {
  thread_local float buf[kQ8BlockFloats];
  NBITS_CHECK(rows * n <= kQ8BlockFloats, "attention: int8 cache block of ", rows, " rows of ", n, " above ",
              kQ8BlockFloats, " values");
  for (int64_t r = 0; r < rows; ++r) dequantize_kv_q8_row(M + r * kv_q8_row_bytes(n), n, buf + r * n);
  return buf;
}
inline void dot_rows(const float* x, int64_t nx, int64_t xs, const int8_t* M, int64_t rows, int64_t n,
                     float alpha, float* y, int64_t ys) {
  vec_dot_rows(x, nx, xs, dequantize_rows(M, rows, n), rows, n, alpha, y, ys);
}
inline void accumulate_rows(const float* p, int64_t np, int64_t ps, const float* M, int64_t rows, int64_t n,
                            float* y, int64_t ys) {
  vec_accumulate_rows(p, np, ps, M, rows, n, y, ys);
}
inline void accumulate_rows(const float* p, int64_t np, int64_t ps, const uint16_t* M, int64_t rows,
                            int64_t n, float* y, int64_t ys) {
  vec_accumulate_rows_f16(p, np, ps, M, rows, n, y, ys);
}
inline void accumulate_rows(const float* p, int64_t np, int64_t ps, const int8_t* M, int64_t rows, int64_t n,
                            float* y, int64_t ys) {
  vec_accumulate_rows(p, np, ps, dequantize_rows(M, rows, n), rows, n, y, ys);
}

// part == nullptr: normalised rows into out. Otherwise the partial layout of attend_rows_partial
// (no smooth term) into part, out unused.
template <typename T>
void attend(const float* q, int64_t q_stride, int64_t nq, const T* K, const T* V, int64_t n,
            const AttentionParams& p, float* scratch, float* out, int64_t out_stride, float* part = nullptr) {
  const int64_t H = p.head_size;
  // Rows per block: about 16 KiB of K (or V), so the block stays in L1 across the group.
  const int64_t block = std::max<int64_t>(8, 4096 / std::max<int64_t>(H, 1));
  // Decode reads K/V from memory: while the group works on a K block (in L1 after the first
  // head), fetch the next K block and this V block, a slice per head, so memory overlaps compute.
  const int64_t RH = attn::row_elems<T>(H);  // elements of T per cache row
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t rows = std::min(block, n - j0);
    const int64_t next = std::min(block, std::max<int64_t>(0, n - j0 - block));
    for (int64_t g = 0; g < nq; g += 2) {
      const int64_t pair = std::min<int64_t>(2, nq - g);
      dot_rows(q + g * q_stride, pair, q_stride, K + j0 * RH, rows, H, p.scale, scratch + g * n + j0, n);
      const int64_t k0 = next * RH * g / nq, k1 = next * RH * (g + pair) / nq;
      const int64_t v0 = rows * RH * g / nq, v1 = rows * RH * (g + pair) / nq;
      prefetch(K + (j0 + block) * RH + k0, k1 - k0);
      prefetch(V + j0 * RH + v0, v1 - v0);
    }
  }
  for (int64_t g = 0; g < nq; ++g) {
    float* s = scratch + g * n;
    if (p.softcap > 0.0f)
      for (int64_t j = 0; j < n; ++j) s[j] = p.softcap * std::tanh(s[j] / p.softcap);
    float mx = vec_max(s, n);
    if (part) {
      part[nq * H + g] = mx;
      part[nq * H + nq + g] = vec_exp_shift_sum(s, n, mx);
      std::fill(part + g * H, part + (g + 1) * H, 0.0f);
      continue;
    }
    const float sink = sink_logit(p, g);
    if (has_sink(p)) mx = std::max(mx, sink);
    float sum = vec_exp_shift_sum(s, n, mx);
    if (has_sink(p)) sum += std::exp(sink - mx);
    vec_scale(s, 1.0f / sum, n);
    std::fill(out + g * out_stride, out + g * out_stride + H, 0.0f);
  }
  if (part) {
    out = part;
    out_stride = H;
  }
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t rows = std::min(block, n - j0);
    accumulate_rows(scratch + j0, nq, n, V + j0 * RH, rows, H, out, out_stride);
  }
}

// The portable tile: 8 lanes as plain arrays (loops the compiler may vectorize), for ISAs
// without a tile of their own.
struct Portable {
  struct R {
    float v[8];
  };
  static constexpr int kLanes = 8, kAcc = 4;
  template <typename F>
  static R map(F f) {
    R r;
    for (int i = 0; i < kLanes; ++i) r.v[i] = f(i);
    return r;
  }
  static R zero() { return set1(0.0f); }
  static R set1(float x) {
    return map([&](int) { return x; });
  }
  static R load(const float* p) {
    return map([&](int i) { return p[i]; });
  }
  static void store(float* p, R x) { std::memcpy(p, x.v, sizeof x.v); }
  static R fmadd(R a, R b, R c) {
    return map([&](int i) { return a.v[i] * b.v[i] + c.v[i]; });
  }
  static R add(R a, R b) {
    return map([&](int i) { return a.v[i] + b.v[i]; });
  }
  static R sub(R a, R b) {
    return map([&](int i) { return a.v[i] - b.v[i]; });
  }
  static R mul(R a, R b) {
    return map([&](int i) { return a.v[i] * b.v[i]; });
  }
  static R max(R a, R b) {
    return map([&](int i) { return std::fmax(a.v[i], b.v[i]); });
  }
  static R exp(R x) {
    return map([&](int i) { return std::exp(x.v[i]); });
  }
  static R lt_select(R a, R b, R x, R y) {
    return map([&](int i) { return a.v[i] < b.v[i] ? x.v[i] : y.v[i]; });
  }
  static void widen(const uint16_t* h, float* f, int64_t n) {
    for (int64_t i = 0; i < n; ++i) f[i] = fp16_to_float(h[i]);
  }
  static void widen_q8(const int8_t* rows, float* f, int64_t nrows, int64_t H) {
    for (int64_t r = 0; r < nrows; ++r) dequantize_kv_q8_row(rows + r * kv_q8_row_bytes(H), H, f + r * H);
  }
  // The decode kernel's (kernels/attention_decode_inl.h).
  static constexpr int kDecodeHeads = 4, kDecodeQRegs = 0;
  static R load_partial(const float* p, int n) {
    return map([&](int i) { return i < n ? p[i] : 0.0f; });
  }
  static void store_partial(float* p, R x, int n) {
    for (int i = 0; i < n; ++i) p[i] = x.v[i];
  }
  // fold4: lanes 0..3 the sums of a[0..3]; fold_groups: group g's to lanes 4g..4g+3.
  static R fold4(const R* a) {
    return map([&](int j) {
      float s = 0.0f;
      if (j < 4)
        for (int i = 0; i < kLanes; ++i) s += a[j].v[i];
      return s;
    });
  }
  static R fold_groups(const R* z) {
    return map([&](int j) { return z[j / 4].v[j % 4]; });
  }
  static float hmax(R x) {
    float m = x.v[0];
    for (int i = 1; i < kLanes; ++i) m = std::fmax(m, x.v[i]);
    return m;
  }
  static float hsum(R x) {
    float s = 0.0f;
    for (int i = 0; i < kLanes; ++i) s += x.v[i];
    return s;
  }
  static R div(R a, R b) {
    return map([&](int i) { return a.v[i] / b.v[i]; });
  }
  static R iota() {
    return map([&](int i) { return static_cast<float>(i); });
  }
};

// The tile and decode kernels of one ISA, chosen together (here, and by attention_select_isa).
struct Kernels {
  attn::TileKernels tile;
  attn::DecodeKernels decode;
};

template <class V>
Kernels kernels_of(const char* isa) {
  return {attn::tile_kernels<V>(isa), attn::decode_kernels<V>()};
}

#if defined(NBITS_ARCH_X86)
#if NBITS_X86_AVX512
Kernels avx512_kernels() { return {attention_tile_avx512(), attention_decode_avx512()}; }
#endif
Kernels avx2_kernels() { return {attention_tile_avx2(), attention_decode_avx2()}; }
#endif
#if defined(NBITS_ARCH_RISCV)
Kernels rvv_kernels() { return {attention_tile_rvv(), attention_decode_rvv()}; }
#endif
#if defined(NBITS_ARCH_ARM64)
Kernels neon_kernels() { return {attention_tile_neon(), attention_decode_neon()}; }
#endif

const Kernels* best_kernels() {
  static const Kernels k = [] {
#if defined(NBITS_ARCH_X86)
    const CpuFeatures& f = cpu_features();
#if NBITS_X86_AVX512
    if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.fma && f.f16c) return avx512_kernels();
#endif
    if (f.avx2 && f.fma && f.f16c) return avx2_kernels();
#endif
#if defined(NBITS_ARCH_RISCV)
    if (attention_rvv_supported()) return rvv_kernels();
#endif
#if defined(NBITS_ARCH_ARM64)
    return neon_kernels();  // AArch64 always has NEON
#else
    return kernels_of<Portable>("scalar");
#endif
  }();
  return &k;
}

static_assert(attn::kMaxTileRows == kAttentionMaxTileRows && attn::kMaxHead == kAttentionMaxHead &&
              attn::kDecodeMaxHeads == kAttentionDecodeHeads);

std::atomic<const Kernels*> g_selected{nullptr};

const Kernels& selected_kernels() {
  const Kernels* k = g_selected.load(std::memory_order_relaxed);
  return k ? *k : *best_kernels();
}
const attn::TileKernels& tile_kernels() { return selected_kernels().tile; }

// Per-thread tile buffers (no allocation: decode and prefill steps allocate nothing).
struct Work {
  alignas(64) float qt[attn::kMaxHead * attn::kMaxTileRows];
  alignas(64) float ot[attn::kMaxHead * attn::kMaxTileRows];
  alignas(64) float s[64 * attn::kMaxTileRows];
  alignas(64) float kb[attn::kBlockFloats];
  alignas(64) float vb[attn::kBlockFloats];
  alignas(64) float lo[attn::kMaxTileRows];
  alignas(64) float hi[attn::kMaxTileRows];
  alignas(64) float m[attn::kMaxTileRows];
  alignas(64) float l[attn::kMaxTileRows];
  alignas(64) float alpha[attn::kDecodeMaxHeads];
};
static_assert(attn::kDecodeMaxHeads <= attn::kMaxTileRows &&
              attn::kDecodeMaxHeads * attn::kDecodeMaxBlock <= 64 * attn::kMaxTileRows &&
              attn::kDecodeMaxHeads * attn::kMaxHead <= attn::kMaxHead * attn::kMaxTileRows);

Work& work() {
  thread_local Work w;
  return w;
}

// Runs rows [r0, r0 + nr) of rows (nr <= the tile rows) over keys [jb, je) into w.ot/m/l; returns
// the padded row count (the stride of w.ot).
template <typename T>
int64_t run_tile(const AttentionRows& rows, int64_t r0, int64_t nr, const T* K, const T* V, int64_t jb,
                 int64_t je, const AttentionParams& p, Work& w) {
  const attn::TileKernels& k = tile_kernels();
  const int nv = nr <= k.lanes ? 1 : 2;
  const int64_t MP = nv * k.lanes, H = p.head_size;
  NBITS_CHECK(H >= 1 && H <= attn::kMaxHead && nr <= MP, "attention: head size ", H, " or ", nr,
              " rows out of range");
  int64_t lo_max = 0, hi_min = INT64_MAX;
  for (int64_t r = 0; r < MP; ++r) {
    if (r < nr) {
      const float* q = rows.q[r0 + r];
      for (int64_t h = 0; h < H; ++h) w.qt[h * MP + r] = q[h] * p.scale;
      w.lo[r] = static_cast<float>(rows.lo[r0 + r]);
      w.hi[r] = static_cast<float>(rows.hi[r0 + r]);
      lo_max = std::max(lo_max, rows.lo[r0 + r]);
      hi_min = std::min(hi_min, rows.hi[r0 + r]);
    } else {
      for (int64_t h = 0; h < H; ++h) w.qt[h * MP + r] = 0.0f;
      w.lo[r] = w.hi[r] = 0.0f;
    }
  }
  attn::Tile t;
  t.H = H;
  t.qt = w.qt;
  t.lo = w.lo;
  t.hi = w.hi;
  t.lo_max = lo_max;
  t.hi_min = hi_min;
  t.ot = w.ot;
  t.m = w.m;
  t.l = w.l;
  t.s = w.s;
  t.kb = w.kb;
  t.vb = w.vb;
  if constexpr (std::is_same_v<T, float>)
    k.f32[nv - 1](t, K, V, jb, je, p.softcap);
  else if constexpr (std::is_same_v<T, uint16_t>)
    k.f16[nv - 1](t, K, V, jb, je, p.softcap);
  else
    k.q8[nv - 1](t, K, V, jb, je, p.softcap);
  return MP;
}

// The key span rows [r0, r0 + nr) need.
void key_span(const AttentionRows& rows, int64_t r0, int64_t nr, int64_t* jb, int64_t* je) {
  *jb = INT64_MAX;
  *je = 0;
  for (int64_t r = r0; r < r0 + nr; ++r) {
    *jb = std::min(*jb, rows.lo[r]);
    *je = std::max(*je, rows.hi[r]);
  }
}

// out = o * c / (l * c + sink term), c = exp(m - m*), m* = max(m, the row's sink logit).
template <typename T>
void attend_all(const AttentionRows& rows, const T* K, const T* V, const AttentionParams& p) {
  Work& w = work();
  const int64_t step = attention_tile_rows(), H = p.head_size;
  for (int64_t r0 = 0; r0 < rows.n; r0 += step) {
    const int64_t nr = std::min(step, rows.n - r0);
    int64_t jb, je;
    key_span(rows, r0, nr, &jb, &je);
    const int64_t MP = run_tile(rows, r0, nr, K, V, jb, je, p, w);
    for (int64_t r = 0; r < nr; ++r) {
      const float sink = sink_logit(p, r0 + r);
      const float mx = has_sink(p) ? std::max(w.m[r], sink) : w.m[r];
      const float c = std::exp(w.m[r] - mx);
      const float den = w.l[r] * c + (has_sink(p) ? std::exp(sink - mx) : 0.0f);
      const float f = c / den;
      float* out = rows.out[r0 + r];
      for (int64_t i = 0; i < H; ++i) out[i] = w.ot[i * MP + r] * f;
    }
  }
}

template <typename T>
void attend_part(const AttentionRows& rows, const T* K, const T* V, int64_t jb, int64_t je,
                 const AttentionParams& p, float* part) {
  Work& w = work();
  const int64_t step = attention_tile_rows(), H = p.head_size, n = rows.n;
  for (int64_t r0 = 0; r0 < n; r0 += step) {
    const int64_t nr = std::min(step, n - r0);
    int64_t b, e;
    key_span(rows, r0, nr, &b, &e);
    b = std::max(b, jb);
    e = std::min(e, je);
    if (b >= e) {
      for (int64_t r = r0; r < r0 + nr; ++r) {
        std::fill(part + r * H, part + (r + 1) * H, 0.0f);
        part[n * H + r] = -FLT_MAX;
        part[n * H + n + r] = 0.0f;
      }
      continue;
    }
    const int64_t MP = run_tile(rows, r0, nr, K, V, b, e, p, w);
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t i = 0; i < H; ++i) part[(r0 + r) * H + i] = w.ot[i * MP + r];
      part[n * H + r0 + r] = w.m[r];
      part[n * H + n + r0 + r] = w.l[r];
    }
  }
}

// One position: heads [0, nq) in calls of up to kDecodeMaxHeads. part == nullptr: normalised rows
// into out; otherwise the partial layout of attend_rows_partial (no smooth term) into part.
template <typename T>
void decode(const float* q, int64_t q_stride, int64_t nq, const T* K, const T* V, int64_t n,
            const AttentionParams& p, float* out, int64_t out_stride, float* part) {
  const int64_t H = p.head_size;
  NBITS_CHECK(H >= 1 && H <= attn::kMaxHead && n >= 1, "attention: head size ", H, " or ", n,
              " keys out of range");
  Work& w = work();
  const attn::DecodeKernels& k = selected_kernels().decode;
  const int64_t lanes = tile_kernels().lanes, qstride = (H + lanes - 1) / lanes * lanes;
  for (int64_t g0 = 0; g0 < nq; g0 += attn::kDecodeMaxHeads) {
    const int nc = static_cast<int>(std::min<int64_t>(attn::kDecodeMaxHeads, nq - g0));
    attn::Decode d;
    d.H = H;
    d.qstride = qstride;
    d.nq = nc;
    for (int g = 0; g < nc; ++g) {
      const float* x = q + (g0 + g) * q_stride;
      float* y = w.qt + g * qstride;
      for (int64_t i = 0; i < H; ++i) y[i] = x[i] * p.scale;
      std::fill(y + H, y + qstride, 0.0f);
    }
    d.qs = w.qt;
    d.o = part ? part + g0 * H : out + g0 * out_stride;
    d.os = part ? H : out_stride;
    for (int g = 0; g < nc; ++g) std::fill(d.o + g * d.os, d.o + g * d.os + H, 0.0f);
    d.m = w.m;
    d.l = w.l;
    d.alpha = w.alpha;
    d.s = w.s;
    d.kb = w.kb;
    d.vb = w.vb;
    d.softcap = p.softcap;
    if constexpr (std::is_same_v<T, float>)
      k.f32(d, K, V, n);
    else if constexpr (std::is_same_v<T, uint16_t>)
      k.f16(d, K, V, n);
    else
      k.q8(d, K, V, n);
    for (int g = 0; g < nc; ++g) {
      if (part) {
        part[nq * H + g0 + g] = w.m[g];
        part[nq * H + nq + g0 + g] = w.l[g];
        continue;
      }
      const float sink = sink_logit(p, g0 + g);
      const float mx = has_sink(p) ? std::max(w.m[g], sink) : w.m[g];
      const float c = std::exp(w.m[g] - mx);
      const float f = c / (w.l[g] * c + (has_sink(p) ? std::exp(sink - mx) : 0.0f));
      float* o = d.o + g * d.os;
      for (int64_t i = 0; i < H; ++i) o[i] *= f;
    }
  }
}

}  // namespace

void quantize_kv_q8_row(const float* x, int64_t head_size, int8_t* row) {
  float amax = 0.0f;
  for (int64_t i = 0; i < head_size; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / 127.0f;
  for (int64_t i = 0; i < head_size; ++i) {
    const float c = scale > 0.0f ? std::round(x[i] / scale) : 0.0f;
    row[i] = static_cast<int8_t>(std::clamp(c, -127.0f, 127.0f));
  }
  std::memcpy(row + head_size, &scale, sizeof scale);
}

void dequantize_kv_q8_row(const int8_t* row, int64_t head_size, float* x) {
  float scale;
  std::memcpy(&scale, row + head_size, sizeof scale);
  for (int64_t i = 0; i < head_size; ++i) x[i] = static_cast<float>(row[i]) * scale;
}

int64_t attention_tile_rows() { return 2 * tile_kernels().lanes; }

const char* attention_isa() { return tile_kernels().isa; }

bool attention_select_isa(const char* isa) {
  static const Kernels portable = kernels_of<Portable>("scalar");
#if defined(NBITS_ARCH_X86)
  static const Kernels avx2 = avx2_kernels();
  const CpuFeatures& f = cpu_features();
  const bool has2 = f.avx2 && f.fma && f.f16c;
  if (std::strcmp(isa, "avx2") == 0 && has2) return g_selected.store(&avx2), true;
#if NBITS_X86_AVX512
  static const Kernels avx512 = avx512_kernels();
  if (std::strcmp(isa, "avx512") == 0 && has2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)
    return g_selected.store(&avx512), true;
#endif
#endif
#if defined(NBITS_ARCH_ARM64)
  if (std::strcmp(isa, "neon") == 0) {
    static const Kernels neon = neon_kernels();
    return g_selected.store(&neon), true;
  }
#endif
#if defined(NBITS_ARCH_RISCV)
  if (std::strcmp(isa, "rvv") == 0 && attention_rvv_supported()) {
    static const Kernels rvv = rvv_kernels();
    return g_selected.store(&rvv), true;
  }
#endif
  if (std::strcmp(isa, "scalar") == 0) return g_selected.store(&portable), true;
  if (std::strcmp(isa, "best") == 0) return g_selected.store(nullptr), true;
  return false;
}

void attend_rows(const AttentionRows& rows, const float* K, const float* V, const AttentionParams& p) {
  attend_all(rows, K, V, p);
}
void attend_rows(const AttentionRows& rows, const uint16_t* K, const uint16_t* V, const AttentionParams& p) {
  attend_all(rows, K, V, p);
}
void attend_rows_partial(const AttentionRows& rows, const float* K, const float* V, int64_t jb, int64_t je,
                         const AttentionParams& p, float* part) {
  attend_part(rows, K, V, jb, je, p, part);
}
void attend_rows_partial(const AttentionRows& rows, const uint16_t* K, const uint16_t* V, int64_t jb,
                         int64_t je, const AttentionParams& p, float* part) {
  attend_part(rows, K, V, jb, je, p, part);
}

void attend_rows(const AttentionRows& rows, const int8_t* K, const int8_t* V, const AttentionParams& p) {
  attend_all(rows, K, V, p);
}
void attend_rows_partial(const AttentionRows& rows, const int8_t* K, const int8_t* V, int64_t jb, int64_t je,
                         const AttentionParams& p, float* part) {
  attend_part(rows, K, V, jb, je, p, part);
}

void attention_merge(const float* parts, int64_t nparts, int64_t part_stride, int64_t n,
                     const AttentionParams& p, float* const* out) {
  const int64_t H = p.head_size;
  for (int64_t r = 0; r < n; ++r) {
    const float sink = sink_logit(p, r);
    float mx = has_sink(p) ? sink : -FLT_MAX;
    for (int64_t k = 0; k < nparts; ++k) mx = std::max(mx, parts[k * part_stride + n * H + r]);
    float den = has_sink(p) ? std::exp(sink - mx) : 0.0f;
    float* o = out[r];
    std::fill(o, o + H, 0.0f);
    for (int64_t k = 0; k < nparts; ++k) {
      const float* part = parts + k * part_stride;
      const float c = std::exp(part[n * H + r] - mx);
      if (c == 0.0f) continue;
      den += part[n * H + n + r] * c;
      for (int64_t i = 0; i < H; ++i) o[i] += part[r * H + i] * c;
    }
    const float f = 1.0f / den;
    for (int64_t i = 0; i < H; ++i) o[i] *= f;
  }
}

void attend_group(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V, int64_t n,
                  const AttentionParams& p, float* scratch, float* out, int64_t out_stride) {
  attend(q, q_stride, nq, K, V, n, p, scratch, out, out_stride);
}

void attend_group(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                  int64_t n, const AttentionParams& p, float* scratch, float* out, int64_t out_stride) {
  attend(q, q_stride, nq, K, V, n, p, scratch, out, out_stride);
}

void attend_group(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V, int64_t n,
                  const AttentionParams& p, float* scratch, float* out, int64_t out_stride) {
  attend(q, q_stride, nq, K, V, n, p, scratch, out, out_stride);
}

void attend_group_partial(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V,
                          int64_t n, const AttentionParams& p, float* scratch, float* part) {
  attend(q, q_stride, nq, K, V, n, p, scratch, nullptr, 0, part);
}

void attend_group_partial(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V,
                          int64_t n, const AttentionParams& p, float* scratch, float* part) {
  attend(q, q_stride, nq, K, V, n, p, scratch, nullptr, 0, part);
}

void attend_group_partial(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                          int64_t n, const AttentionParams& p, float* scratch, float* part) {
  attend(q, q_stride, nq, K, V, n, p, scratch, nullptr, 0, part);
}

}  // namespace nbits::kernels

namespace nbits::kernels {

void attend_decode(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V, int64_t n,
                   const AttentionParams& p, float* out, int64_t out_stride) {
  decode(q, q_stride, nq, K, V, n, p, out, out_stride, nullptr);
}
void attend_decode(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                   int64_t n, const AttentionParams& p, float* out, int64_t out_stride) {
  decode(q, q_stride, nq, K, V, n, p, out, out_stride, nullptr);
}
void attend_decode_partial(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V,
                           int64_t n, const AttentionParams& p, float* part) {
  decode(q, q_stride, nq, K, V, n, p, nullptr, 0, part);
}
void attend_decode_partial(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                           int64_t n, const AttentionParams& p, float* part) {
  decode(q, q_stride, nq, K, V, n, p, nullptr, 0, part);
}

void attend_decode(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V, int64_t n,
                   const AttentionParams& p, float* out, int64_t out_stride) {
  decode(q, q_stride, nq, K, V, n, p, out, out_stride, nullptr);
}
void attend_decode_partial(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V,
                           int64_t n, const AttentionParams& p, float* part) {
  decode(q, q_stride, nq, K, V, n, p, nullptr, 0, part);
}

}  // namespace nbits::kernels
