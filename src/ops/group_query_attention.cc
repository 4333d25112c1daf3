// com.microsoft GroupQueryAttention (fp32, CPU semantics of
// ../shared/docs/onnx-genai-spec.md section 2): packed QKV or separate q/k/v,
// rotary from cos/sin caches, KV cache update in place (past == present
// buffer) or into a separate present buffer, causal attention with head
// grouping, optional local window, softcap, smooth softmax and per-head attention sinks
// (input 11 head_sink, [num_heads] fp32: an extra exp(sink_h) term in head h's softmax
// denominator, gpt-oss's attention sinks).
//
// local_window_size follows ORT 1.30 (the 2026 rewrite, HF sliding_window
// semantics): with W > 0, a query at causal length L sees keys [L - W, L).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "base/fp16.h"
#include "kernels/attention.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/rotary.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

struct GqaAttrs {
  int64_t num_heads = 0, kv_heads = 0;
  float scale = 0.0f, softcap = 0.0f;
  int64_t window = -1;
  bool rotary = false, interleaved = false, smooth = false, causal = true;
};

// Query and score scratch shared by every GQA node run from the calling thread
// (nodes run one after another; pool workers use the caller's buffers): one
// buffer grown to the largest step instead of one per layer (11 MB for a
// 128-token Qwen2.5-0.5B prompt).
struct Scratch {
  std::vector<float> q, scores;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// NBITS_ATTENTION selects the attention kernels, for before/after comparisons in one binary:
// "group": the per-position attend_group path for every head size and position count (before the
// tile kernel); "tile": the tile kernel for more than one position, attend_group for one-position
// decode (before the keys kernel); unset (or anything else): the tile kernel, and for one position
// kernels::attend_decode (the keys across the vector lanes).
enum class AttentionPath { kGroup, kTile, kKeys };

AttentionPath attention_path() {
  static const AttentionPath path = [] {
    const char* v = std::getenv("NBITS_ATTENTION");
    if (v != nullptr && std::strcmp(v, "group") == 0) return AttentionPath::kGroup;
    if (v != nullptr && std::strcmp(v, "tile") == 0) return AttentionPath::kTile;
    return AttentionPath::kKeys;
  }();
  return path;
}

class GroupQueryAttentionOp final : public Op {
 public:
  GroupQueryAttentionOp(std::string where, GqaAttrs at, DType kv)
      : where_(std::move(where)), at_(at), kv_(kv) {}

  void infer(const OpArgs& a) const override {
    const Geometry g = geometry(a);
    a.out[0]->shape = Shape{g.B, g.S, at_.num_heads * g.H};
    for (size_t i = 1; i <= 2; ++i)
      if (Tensor* t = a.output(i)) t->shape = Shape{g.B, at_.kv_heads, g.present_len, row_elems(g.H)};
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    Geometry g = geometry(a);
    const Tensor& seqlens = *a.in[5];
    NBITS_CHECK(seqlens.numel() == g.B, where_, ": seqlens_k has ", seqlens.numel(), " values for batch ",
                g.B);
    const int64_t S = g.S, L = g.present_len;
    const bool first_prompt = S == g.total;
    for (int64_t b = 0; b < g.B; ++b) {
      const int64_t total_b = read_int(seqlens, b) + 1;
      const int64_t past_b = first_prompt ? 0 : total_b - S;
      NBITS_CHECK(total_b >= 1 && total_b <= L && past_b >= 0 && past_b + S <= L, where_, ": seqlens_k[", b,
                  "]=", total_b - 1, " is inconsistent with sequence length ", S, ", total ", g.total,
                  " and cache length ", L);
      g.past[b] = past_b;
      g.total_b[b] = total_b;
    }
    if (at_.rotary) check_rotary(a, g);

    if (kv_ == DType::kF16)
      attend(a, g, ctx, kv_rows<uint16_t>(a, g));
    else if (kv_ == DType::kI8)
      attend(a, g, ctx, kv_rows<int8_t>(a, g));
    else
      attend(a, g, ctx, kv_rows<float>(a, g));
  }

  // The present K/V rows are dense [B, Nkv, L, H], or each batch row its own [Nkv, L, H] block
  // (Tensor::rows: the batched decode step over sessions' own caches, past == present).
  bool takes_row_pointers(bool output, size_t i) const override {
    return output ? i == 1 || i == 2 : i == 3 || i == 4;
  }

 private:
  static constexpr int kMaxBatch = 64;
  // The geometry of one run, from the input shapes (and, in run(), seqlens_k and the rotary caches).
  struct Geometry {
    int64_t B = 0, S = 0, H = 0, past_len = 0, total = 0, present_len = 0, half = 0;
    bool packed = true;
    int64_t past[kMaxBatch] = {}, total_b[kMaxBatch] = {};
  };

  Geometry geometry(const OpArgs& a) const {
    Geometry g;
    const Shape& q = a.in[0]->shape;
    NBITS_CHECK(q.rank == 3, where_, ": query must be [B,S,hidden], got ", q.str());
    g.B = q[0];
    g.S = q[1];
    NBITS_CHECK(g.B <= kMaxBatch, where_, ": batch ", g.B, " above the supported ", kMaxBatch);
    g.packed = a.input(1) == nullptr;
    const int64_t div = g.packed ? at_.num_heads + 2 * at_.kv_heads : at_.num_heads;
    NBITS_CHECK(q[2] % div == 0, where_, ": query hidden size ", q[2], " is not a multiple of ", div,
                " heads");
    g.H = q[2] / div;
    if (!g.packed) {
      const Shape want{g.B, g.S, at_.kv_heads * g.H};
      NBITS_CHECK(a.in[1]->shape == want && a.in[2]->shape == want, where_, ": key/value must be ",
                  want.str(), ", got ", a.in[1]->shape.str(), " and ", a.in[2]->shape.str());
    }
    const Tensor* past = a.input(3);
    if (past) {
      const Shape& p = past->shape;
      NBITS_CHECK(
          p.rank == 4 && p[0] == g.B && p[1] == at_.kv_heads && p[3] == row_elems(g.H) && a.in[4]->shape == p,
          where_, ": past key/value must be [", g.B, ",", at_.kv_heads, ",L,", row_elems(g.H), "], got ",
          p.str(), " and ", a.in[4]->shape.str());
      g.past_len = p[2];
    }
    const Tensor& total = *a.in[6];
    NBITS_CHECK(total.numel() == 1, where_, ": total_sequence_length must hold one value");
    g.total = read_int(total, 0);
    NBITS_CHECK(g.total >= g.S && g.total >= 1, where_, ": total_sequence_length ", g.total,
                " < sequence length ", g.S);
    g.present_len = std::max(g.total, g.past_len);
    return g;
  }

  template <typename T>
  struct KvRows {  // where each batch row's [Nkv, L, H] K and V blocks start
    T* k[kMaxBatch];
    T* v[kMaxBatch];
  };
  template <typename T>
  KvRows<T> kv_rows(const OpArgs& a, const Geometry& g) const {
    KvRows<T> kv;
    const Tensor* io[4] = {a.out[1], a.out[2], a.input(3), a.input(4)};
    const bool apart = io[0]->rows || io[1]->rows || (io[2] && io[2]->rows) || (io[3] && io[3]->rows);
    const int64_t block = at_.kv_heads * g.present_len * row_elems(g.H);
    for (int64_t b = 0; b < g.B; ++b) {
      if (apart) {
        for (int i = 0; i < 4; ++i)
          NBITS_CHECK(io[i] && io[i]->rows && io[i]->rows[b] == io[i & 1]->rows[b] &&
                          io[2]->shape[2] == g.present_len,
                      where_, ": batch rows apart need past and present to be one buffer per row");
        kv.k[b] = static_cast<T*>(io[0]->rows[b]);
        kv.v[b] = static_cast<T*>(io[1]->rows[b]);
      } else {
        kv.k[b] = io[0]->as<T>() + b * block;
        kv.v[b] = io[1]->as<T>() + b * block;
      }
    }
    return kv;
  }

  // Elements of one cache row: H (fp32, fp16), or H int8 codes and the 4-byte scale
  // (kernels::kv_q8_row_bytes).
  int64_t row_elems(int64_t H) const { return kv_ == DType::kI8 ? kernels::kv_q8_row_bytes(H) : H; }

  // The cache update and attention over K/V rows of type T (float, IEEE fp16 bits, or int8 rows).
  template <typename T>
  void attend(const OpArgs& a, const Geometry& g, RunContext& ctx, const KvRows<T>& kv) const {
    const int64_t Nq = at_.num_heads, Nkv = at_.kv_heads, H = g.H, S = g.S, L = g.present_len;
    const int64_t RH = row_elems(H);
    update_cache(a, g, kv);

    // Rotated queries, [B, S, Nq, H].
    Scratch& sc = scratch();
    std::vector<float>& qbuf = sc.q;
    std::vector<float>& scores_buf = sc.scores;
    if (qbuf.size() < static_cast<size_t>(g.B * S * Nq * H)) qbuf.resize(g.B * S * Nq * H);
    const float* q_in = a.in[0]->as<const float>();
    const int64_t q_stride = a.in[0]->shape[2];
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < Nq; ++h) {
          const float* x = q_in + (b * S + s) * q_stride + h * H;
          float* y = qbuf.data() + ((b * S + s) * Nq + h) * H;
          if (at_.rotary) {
            rotate(x, cos_row(a, g, g.past[b] + s), sin_row(a, g, g.past[b] + s), g.half, at_.interleaved, H,
                   y);
          } else {
            std::memcpy(y, x, H * sizeof(float));
          }
        }

    const int64_t G = Nq / Nkv;
    // Attention over a short context is a few microseconds: not worth waking a thread.
    int64_t longest = 0;
    for (int64_t b = 0; b < g.B; ++b) longest = std::max<int64_t>(longest, g.total_b[b]);
    const bool tiny = g.B * Nq * S * longest * H < 32 * 1024;
    const int64_t threads = tiny ? 1 : ctx.pool.num_threads();
    kernels::AttentionParams ap;
    ap.head_size = H;
    ap.scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(H));
    ap.softcap = at_.softcap;
    ap.smooth = at_.smooth;
    // Indexed by query head here; each call below offsets it to its own rows.
    if (const Tensor* sinks = a.input(11)) {
      NBITS_CHECK(sinks->numel() == Nq, where_, ": head_sink holds ", sinks->numel(), " values for ", Nq,
                  " heads");
      ap.sinks = sinks->as<const float>();
    }
    float* out = a.out[0]->as<float>();
    // attend_long_heads attends each position by itself, as a one-position step would.
    if (H > kernels::kAttentionMaxHead || attention_path() == AttentionPath::kGroup)
      return attend_long_heads(g, ctx, kv, threads, ap, qbuf.data(), out, S * Nq * H);
    if (S == 1) return attend_decode(g, ctx, kv, threads, longest, ap, qbuf.data(), out, Nq * H);
    if (a.positions_as_decode) {
      // Position s as the one-position step at past + s: its geometry, its thread and key-split
      // choice (which set the summation order), its rows of q and out.
      for (int64_t s = 0; s < S; ++s) {
        Geometry g1 = g;
        g1.S = 1;
        int64_t longest1 = 0;
        for (int64_t b = 0; b < g.B; ++b) {
          g1.past[b] = g.past[b] + s;
          g1.total_b[b] = g.past[b] + s + 1;
          longest1 = std::max(longest1, g1.total_b[b]);
        }
        const int64_t threads1 = g.B * Nq * longest1 * H < 32 * 1024 ? 1 : ctx.pool.num_threads();
        attend_decode(g1, ctx, kv, threads1, longest1, ap, qbuf.data() + s * Nq * H, out + s * Nq * H,
                      S * Nq * H);
      }
      return;
    }

    // One task = the query rows of a tile, so each K/V block is read once for all of them. When a
    // kv head's G query heads fit a tile, its rows (position-major, then head) are cut into whole
    // tiles that may end inside a position (Qwen2.5: 32 rows = 4 4/7 positions of 7 heads, no lane
    // left empty; a row's keys, blocks and result do not depend on the tile's other rows when
    // they all start at key 0); else hc heads at one position per tile.
    const int64_t tile_rows = kernels::attention_tile_rows();
    const bool flat = G <= tile_rows;
    const int64_t hc = std::min(G, tile_rows), hchunks = (G + hc - 1) / hc;
    const int64_t stiles = flat ? (S * G + tile_rows - 1) / tile_rows : S;
    const int64_t tasks = g.B * Nkv * hchunks * stiles;
    // Decode at long context has fewer tasks than threads: split each task's keys into parts
    // (each thread streams its share of K/V) and merge the partial softmaxes.
    int64_t parts = 1;
    if (tasks < threads && longest >= 512) parts = std::min((threads + tasks - 1) / tasks, longest / 256);
    struct TaskRows {
      const float* q[kernels::kAttentionMaxTileRows];
      float* out[kernels::kAttentionMaxTileRows];
      int64_t lo[kernels::kAttentionMaxTileRows], hi[kernels::kAttentionMaxTileRows];
      float sink[kernels::kAttentionMaxTileRows];  // each row's head's sink logit (head_sink given)
      kernels::AttentionParams ap;                 // the run's, its sinks those of these rows
      kernels::AttentionRows rows;
      const T *K, *V;
    };
    auto task_rows = [&](int64_t t, TaskRows& tr) {
      const int64_t st = t % stiles, c = (t / stiles) % hchunks, kvh = (t / (stiles * hchunks)) % Nkv,
                    b = t / (stiles * hchunks * Nkv);
      // Rows f in [f0, f1) of (position f / nh, head h0 + f % nh).
      const int64_t h0 = kvh * G + c * hc, nh = std::min(hc, G - c * hc);
      const int64_t f0 = flat ? st * tile_rows : st * nh,
                    f1 = flat ? std::min(f0 + tile_rows, S * nh) : f0 + nh;
      int64_t n = 0;
      for (int64_t f = f0; f < f1; ++f, ++n) {
        const int64_t s = f / nh, h = h0 + f % nh;
        const int64_t end = at_.causal ? g.past[b] + s + 1 : g.total_b[b];
        const int64_t start = at_.window > 0 && end > at_.window ? end - at_.window : 0;
        const int64_t row = ((b * S + s) * Nq + h) * H;
        tr.q[n] = qbuf.data() + row;
        tr.out[n] = out + row;
        tr.lo[n] = start;
        tr.hi[n] = end;
        if (ap.sinks != nullptr) tr.sink[n] = ap.sinks[h];
      }
      tr.ap = ap;
      if (ap.sinks != nullptr) tr.ap.sinks = tr.sink;
      tr.rows.q = tr.q;
      tr.rows.out = tr.out;
      tr.rows.lo = tr.lo;
      tr.rows.hi = tr.hi;
      tr.rows.n = n;
      tr.K = kv.k[b] + kvh * L * RH;
      tr.V = kv.v[b] + kvh * L * RH;
    };
    if (parts == 1) {
      const int64_t workers = std::min<int64_t>(tasks, threads);
      ctx.pool.parallel_for(workers, [&](int64_t p) {
        TaskRows tr;
        // Round-robin: causal rows grow with the position, so interleave position tiles across workers.
        for (int64_t t = p; t < tasks; t += workers) {
          task_rows(t, tr);
          kernels::attend_rows(tr.rows, tr.K, tr.V, tr.ap);
        }
      });
      return;
    }
    const int64_t part_floats = kernels::attention_part_floats(kernels::kAttentionMaxTileRows, H);
    if (scores_buf.size() < static_cast<size_t>(tasks * parts * part_floats))
      scores_buf.resize(tasks * parts * part_floats);
    ctx.pool.parallel_for(tasks * parts, [&](int64_t w) {
      TaskRows tr;
      const int64_t t = w / parts, k = w % parts;
      task_rows(t, tr);
      int64_t jb = INT64_MAX, je = 0;
      for (int64_t r = 0; r < tr.rows.n; ++r) {
        jb = std::min(jb, tr.lo[r]);
        je = std::max(je, tr.hi[r]);
      }
      const int64_t b0 = jb + (je - jb) * k / parts, b1 = jb + (je - jb) * (k + 1) / parts;
      kernels::attend_rows_partial(tr.rows, tr.K, tr.V, b0, b1, tr.ap, scores_buf.data() + w * part_floats);
    });
    for (int64_t t = 0; t < tasks; ++t) {
      TaskRows tr;
      task_rows(t, tr);
      kernels::attention_merge(scores_buf.data() + t * parts * part_floats, parts, part_floats, tr.rows.n,
                               tr.ap, tr.out);
    }
  }

  // One position per sequence: the G query heads of a kv head are fewer rows than the tile's
  // lanes; kernels::attend_decode (the keys across the lanes) takes them, per (batch, kv head) and
  // chunk of heads when there are fewer of those than threads (NBITS_ATTENTION=tile: attend_group,
  // heads in pairs sharing each K/V row load). With fewer (batch, kv head) tasks than threads at
  // >= 512 keys, each task's keys are split into parts (every thread streams its share of K/V)
  // and the partial softmaxes merged.
  template <typename T>
  // q, out: the [Nq, H] rows of batch row b at q + b * bstride, out + b * bstride.
  void attend_decode(const Geometry& g, RunContext& ctx, const KvRows<T>& kv, int64_t threads,
                     int64_t longest, const kernels::AttentionParams& ap, const float* q, float* out,
                     int64_t bstride) const {
    const int64_t Nq = at_.num_heads, Nkv = at_.kv_heads, H = g.H, L = g.present_len, G = Nq / Nkv;
    const int64_t RH = row_elems(H);
    const bool keys = attention_path() == AttentionPath::kKeys;
    const int64_t tasks = g.B * Nkv;
    int64_t parts = 1;
    if (tasks < threads && longest >= 512) parts = std::min((threads + tasks - 1) / tasks, longest / 256);
    auto range = [&](int64_t b, int64_t* start, int64_t* end) {
      *end = at_.causal ? g.past[b] + 1 : g.total_b[b];
      *start = at_.window > 0 && *end > at_.window ? *end - at_.window : 0;
    };
    if (parts == 1) {
      if (!keys) return attend_long_heads(g, ctx, kv, threads, ap, q, out, bstride);
      // Chunks of a kv head's query heads only to give every thread work (each chunk reads K/V).
      const int64_t chunks = std::min<int64_t>(G, (threads + tasks - 1) / tasks);
      const int64_t items = tasks * chunks, workers = std::min(items, threads);
      ctx.pool.parallel_for(workers, [&](int64_t w) {
        for (int64_t item = w; item < items; item += workers) {
          const int64_t t = item / chunks, c = item % chunks, b = t / Nkv, kvh = t % Nkv;
          const int64_t h0 = G * c / chunks, h1 = G * (c + 1) / chunks;
          int64_t start, end;
          range(b, &start, &end);
          const T* K = kv.k[b] + (kvh * L + start) * RH;
          const T* V = kv.v[b] + (kvh * L + start) * RH;
          const int64_t row = b * bstride + (kvh * G + h0) * H;
          kernels::attend_decode(q + row, H, h1 - h0, K, V, end - start, from_head(ap, kvh * G + h0),
                                 out + row, H);
        }
      });
      return;
    }
    Scratch& sc = scratch();
    const int64_t items = tasks * parts, workers = std::min(items, threads);
    const int64_t part_floats = kernels::attention_part_floats(G, H),
                  span = keys ? 0 : (longest + parts - 1) / parts + 1;
    if (sc.scores.size() < static_cast<size_t>(items * part_floats + workers * G * span))
      sc.scores.resize(items * part_floats + workers * G * span);
    ctx.pool.parallel_for(workers, [&](int64_t w) {
      float* scores = sc.scores.data() + items * part_floats + w * G * span;
      for (int64_t item = w; item < items; item += workers) {
        const int64_t t = item / parts, k = item % parts, b = t / Nkv, kvh = t % Nkv;
        int64_t start, end;
        range(b, &start, &end);
        const int64_t b0 = start + (end - start) * k / parts, b1 = start + (end - start) * (k + 1) / parts;
        float* part = sc.scores.data() + item * part_floats;
        if (b1 <= b0) {  // a window shorter than the parts: nothing here
          std::fill(part, part + G * H, 0.0f);
          std::fill(part + G * H, part + G * (H + 1), -FLT_MAX);
          std::fill(part + G * (H + 1), part + G * (H + 2), 0.0f);
          continue;
        }
        const T* K = kv.k[b] + (kvh * L + b0) * RH;
        const T* V = kv.v[b] + (kvh * L + b0) * RH;
        const float* qh = q + b * bstride + kvh * G * H;
        if (keys)
          kernels::attend_decode_partial(qh, H, G, K, V, b1 - b0, ap, part);
        else
          kernels::attend_group_partial(qh, H, G, K, V, b1 - b0, ap, scores, part);
      }
    });
    for (int64_t t = 0; t < tasks; ++t)
      merge_heads(sc.scores.data() + t * parts * part_floats, parts, part_floats, G,
                  from_head(ap, (t % Nkv) * G), out + (t / Nkv) * bstride + (t % Nkv) * G * H);
  }

  // ap for rows that are query heads h0, h0 + 1, ...: their sinks from head h0 on.
  static kernels::AttentionParams from_head(const kernels::AttentionParams& ap, int64_t h0) {
    kernels::AttentionParams r = ap;
    if (r.sinks != nullptr) r.sinks += h0;
    return r;
  }

  // kernels::attention_merge for G rows whose outputs follow each other (out + h * H).
  static void merge_heads(const float* parts, int64_t nparts, int64_t part_stride, int64_t G,
                          const kernels::AttentionParams& ap, float* out) {
    const int64_t H = ap.head_size;
    for (int64_t h = 0; h < G; ++h) {
      const float sink = kernels::sink_logit(ap, h);
      float mx = kernels::has_sink(ap) ? sink : -FLT_MAX;
      for (int64_t k = 0; k < nparts; ++k) mx = std::max(mx, parts[k * part_stride + G * H + h]);
      float den = kernels::has_sink(ap) ? std::exp(sink - mx) : 0.0f;
      float* o = out + h * H;
      std::fill(o, o + H, 0.0f);
      for (int64_t k = 0; k < nparts; ++k) {
        const float* part = parts + k * part_stride;
        const float c = std::exp(part[G * H + h] - mx);
        if (c == 0.0f) continue;
        den += part[G * H + G + h] * c;
        for (int64_t i = 0; i < H; ++i) o[i] += part[h * H + i] * c;
      }
      for (int64_t i = 0; i < H; ++i) o[i] /= den;
    }
  }

  // Heads above the tile kernel's buffers: attend_group per (batch, kv head, position) and chunk of
  // that kv head's query heads (full scores in scratch).
  template <typename T>
  // q, out: [S, Nq, H] rows of batch row b at q + b * bstride, out + b * bstride.
  void attend_long_heads(const Geometry& g, RunContext& ctx, const KvRows<T>& kv, int64_t threads,
                         const kernels::AttentionParams& ap, const float* q, float* out,
                         int64_t bstride) const {
    const int64_t Nq = at_.num_heads, Nkv = at_.kv_heads, H = g.H, S = g.S, L = g.present_len;
    const int64_t RH = row_elems(H);
    Scratch& sc = scratch();
    const int64_t G = Nq / Nkv, groups = g.B * Nkv * S;
    const int64_t want_chunks = std::min<int64_t>(G, (threads + groups - 1) / groups);
    const int64_t per_chunk = (G + want_chunks - 1) / want_chunks;
    const int64_t chunks = (G + per_chunk - 1) / per_chunk;  // none empty
    const int64_t tasks = groups * chunks;
    const int64_t parts = std::min<int64_t>(tasks, threads);
    if (sc.scores.size() < static_cast<size_t>(parts * per_chunk * L))
      sc.scores.resize(parts * per_chunk * L);
    ctx.pool.parallel_for(parts, [&](int64_t p) {
      float* scores = sc.scores.data() + p * per_chunk * L;
      for (int64_t t = p; t < tasks; t += parts) {
        const int64_t s = t % S, c = (t / S) % chunks, kvh = (t / (S * chunks)) % Nkv,
                      b = t / (S * chunks * Nkv);
        const int64_t h0 = kvh * G + c * per_chunk, nh = std::min(per_chunk, G - c * per_chunk);
        const T* K = kv.k[b] + kvh * L * RH;
        const T* V = kv.v[b] + kvh * L * RH;
        const int64_t end = at_.causal ? g.past[b] + s + 1 : g.total_b[b];
        const int64_t start = at_.window > 0 && end > at_.window ? end - at_.window : 0;
        kernels::attend_group(q + b * bstride + (s * Nq + h0) * H, H, nh, K + start * RH, V + start * RH,
                              end - start, from_head(ap, h0), scores, out + b * bstride + (s * Nq + h0) * H,
                              H);
      }
    });
  }

  void check_rotary(const OpArgs& a, Geometry& g) const {
    const Tensor& c = *a.in[7];
    const Tensor& s = *a.in[8];
    NBITS_CHECK(c.shape.rank == 2 && c.shape == s.shape, where_,
                ": cos/sin caches must be equal 2-D shapes, got ", c.shape.str(), " and ", s.shape.str());
    g.half = c.shape[1];
    NBITS_CHECK(2 * g.half <= g.H && g.half > 0, where_, ": rotary dim ", 2 * g.half, " exceeds head size ",
                g.H);
    for (int64_t b = 0; b < g.B; ++b)
      NBITS_CHECK(g.past[b] + g.S <= c.shape[0], where_, ": position ", g.past[b] + g.S - 1,
                  " is beyond the ", c.shape[0], " rows of cos_cache");
  }
  const float* cos_row(const OpArgs& a, const Geometry& g, int64_t pos) const {
    return a.in[7]->as<const float>() + pos * g.half;
  }
  const float* sin_row(const OpArgs& a, const Geometry& g, int64_t pos) const {
    return a.in[8]->as<const float>() + pos * g.half;
  }

  // Copies past rows when present is a separate buffer, then writes the new
  // (rotated) K and V rows at [past, past + S), rounded to fp16 for an fp16 cache, quantized to
  // int8 rows (kernels::quantize_kv_q8_row) for an int8 one: once, as written.
  template <typename T>
  void update_cache(const OpArgs& a, const Geometry& g, const KvRows<T>& kv) const {
    const int64_t Nq = at_.num_heads, Nkv = at_.kv_heads, H = g.H, S = g.S, L = g.present_len;
    const int64_t RH = row_elems(H);
    const Tensor* past_k = a.input(3);
    const Tensor* past_v = a.input(4);
    for (int which = 0; which < 2; ++which) {
      const Tensor* past = which == 0 ? past_k : past_v;
      if (past && past->data == (which == 0 ? kv.k[0] : kv.v[0])) continue;  // shared buffer: rows in place
      for (int64_t b = 0; b < g.B; ++b)
        for (int64_t h = 0; h < Nkv; ++h) {
          T* dst = (which == 0 ? kv.k[b] : kv.v[b]) + h * L * RH;
          int64_t keep = 0;
          if (past) {
            keep = std::min(g.past[b], g.past_len);
            NBITS_CHECK(keep == g.past[b], where_, ": past holds ", g.past_len, " rows, ", g.past[b],
                        " needed");
            std::memcpy(dst, past->as<const T>() + (b * Nkv + h) * g.past_len * RH, keep * RH * sizeof(T));
          }
          std::fill(dst + keep * RH, dst + L * RH, T{0});
        }
    }
    const float* q_in = a.in[0]->as<const float>();
    const int64_t stride = a.in[0]->shape[2];
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < Nkv; ++h) {
          const float *k, *v;
          if (g.packed) {
            const float* row = q_in + (b * S + s) * stride;
            k = row + (Nq + h) * H;
            v = row + (Nq + Nkv + h) * H;
          } else {
            k = a.in[1]->as<const float>() + (b * S + s) * Nkv * H + h * H;
            v = a.in[2]->as<const float>() + (b * S + s) * Nkv * H + h * H;
          }
          const int64_t row = h * L + g.past[b] + s;
          T* pk = kv.k[b];
          T* pv = kv.v[b];
          if constexpr (std::is_same_v<T, float>) {
            if (at_.rotary) {
              rotate(k, cos_row(a, g, g.past[b] + s), sin_row(a, g, g.past[b] + s), g.half, at_.interleaved,
                     H, pk + row * H);
            } else {
              std::memcpy(pk + row * H, k, H * sizeof(float));
            }
            std::memcpy(pv + row * H, v, H * sizeof(float));
          } else {
            float kr[kMaxHead];
            NBITS_CHECK(H <= kMaxHead, where_, ": head size ", H, " above ", kMaxHead, " with an ",
                        std::is_same_v<T, int8_t> ? "int8" : "fp16", " cache");
            if (at_.rotary) {
              rotate(k, cos_row(a, g, g.past[b] + s), sin_row(a, g, g.past[b] + s), g.half, at_.interleaved,
                     H, kr);
              k = kr;
            }
            if constexpr (std::is_same_v<T, int8_t>) {
              kernels::quantize_kv_q8_row(k, H, pk + row * RH);
              kernels::quantize_kv_q8_row(v, H, pv + row * RH);
            } else {
              for (int64_t i = 0; i < H; ++i) {
                pk[row * H + i] = float_to_fp16(k[i]);
                pv[row * H + i] = float_to_fp16(v[i]);
              }
            }
          }
        }
  }

  std::string where_;
  GqaAttrs at_;
  DType kv_ = DType::kF32;  // past/present hold fp32, IEEE fp16 or int8 rows (--kv-cache q8)
  static constexpr int64_t kMaxHead = 512;
};

}  // namespace

std::unique_ptr<Op> make_group_query_attention(OpBuild& b) {
  const onnx::Node& n = b.node;
  GqaAttrs at;
  at.num_heads = n.attr_int_required("num_heads");
  at.kv_heads = n.attr_int_required("kv_num_heads");
  b.check(at.num_heads > 0 && at.kv_heads > 0 && at.num_heads % at.kv_heads == 0, "num_heads=", at.num_heads,
          " must be a positive multiple of kv_num_heads=", at.kv_heads);
  at.scale = n.attr_float("scale", 0.0f);
  at.softcap = n.attr_float("softcap", 0.0f);
  at.window = n.attr_int("local_window_size", -1);
  b.check(at.window == -1 || at.window > 0, "local_window_size=", at.window, " must be -1 (off) or > 0");
  at.rotary = n.attr_int("do_rotary", 0) != 0;
  at.interleaved = n.attr_int("rotary_interleaved", 0) != 0;
  at.smooth = n.attr_int("smooth_softmax", 0) != 0;
  at.causal = n.attr_int("causal", 1) != 0;
  b.check(n.attr_int("qk_output", 0) == 0, "attribute qk_output is not supported");
  b.check(n.attr_int("kv_cache_bit_width", 0) == 0,
          "quantized KV cache (kv_cache_bit_width) is not supported");

  b.require_type(0, {DType::kF32}, "query");
  b.check(b.has_input(1) == b.has_input(2), "key and value must both be given or both be empty");
  if (b.has_input(1)) {
    b.require_type(1, {DType::kF32}, "key");
    b.require_type(2, {DType::kF32}, "value");
  }
  b.check(b.has_input(3) == b.has_input(4), "past_key and past_value must both be given or both be empty");
  // The cache: fp32, or fp16 kept as fp16 (graph/rewrites.h lower_float_boundaries leaves it), or
  // int8 rows of head_size codes + an fp32 scale (--kv-cache q8: graph/rewrites.h set_kv_cache_dtype).
  const DType kv = b.has_input(3) ? b.type(3) : DType::kF32;
  if (b.has_input(3)) {
    b.require_type(3, {DType::kF32, DType::kF16, DType::kI8}, "past_key");
    b.require_type(4, {kv}, "past_value (the dtype of past_key)");
  }
  b.require_type(5, {DType::kI32}, "seqlens_k");
  b.require_type(6, {DType::kI32}, "total_sequence_length");
  if (at.rotary) {
    b.require_type(7, {DType::kF32}, "cos_cache");
    b.require_type(8, {DType::kF32}, "sin_cache");
  }
  static const char* const kUnsupported[] = {"position_ids",  "attention_bias", "", "k_scale", "v_scale",
                                             "q_norm_weight", "k_norm_weight"};
  for (size_t i = 9; i < 16; ++i)
    b.check(i == 11 || !b.has_input(i), "input ", i, " (", kUnsupported[i - 9], ") is not supported");
  if (b.has_input(11)) b.require_type(11, {DType::kF32}, "head_sink");
  b.check(n.has_output(1) && n.has_output(2), "outputs present_key and present_value are required");
  b.check(!n.has_output(3), "output 3 (output_qk) is not supported");
  b.set_outputs(DType::kF32);
  b.out_types[1] = b.out_types[2] = kv;
  return std::make_unique<GroupQueryAttentionOp>(b.where(), at, kv);
}

}  // namespace nbits::ops
