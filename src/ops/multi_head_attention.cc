// com.microsoft MultiHeadAttention (ORT contrib op), the layout
// onnxruntime-genai's builder emits for fp16/MHA exports: query [B,S,N*H], key
// and value [B,L,N*H] (or [B,N,L,H]), optional past_key/past_value [B,N,P,H]
// concatenated in front (present = past + new), additive attention_bias
// [B|1, N|1, S, T], key_padding_mask [B,T] (0 = masked with mask_filter_value),
// unidirectional (causal: query s sees keys up to T - S + s).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/vector_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

struct MhaAttrs {
  int64_t num_heads = 0;
  float scale = 0.0f;
  float mask_filter = -10000.0f;
  bool causal = false;
};

// Score rows of the calling thread's tasks (grown once to the longest step).
std::vector<float>& score_scratch() {
  thread_local std::vector<float> s;
  return s;
}

class MultiHeadAttentionOp final : public Op {
 public:
  MultiHeadAttentionOp(std::string where, MhaAttrs at) : where_(std::move(where)), at_(at) {}

  void infer(const OpArgs& a) const override {
    const Geometry g = geometry(a);
    const int64_t N = at_.num_heads;
    a.out[0]->shape = Shape{g.B, g.S, N * g.H};
    for (size_t i = 1; i <= 2; ++i)
      if (Tensor* t = a.output(i)) t->shape = Shape{g.B, N, g.T, g.H};
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    const Geometry g = geometry(a);
    const int64_t N = at_.num_heads, H = g.H, S = g.S, T = g.T;
    // Keys and values as [B, N, T, H]: the present outputs when asked for, else
    // the key/value inputs themselves when they need no concatenation.
    const float *K, *V;
    if (a.output(1) != nullptr || a.output(2) != nullptr || g.P > 0 || !g.k4) {
      Tensor* pk = a.output(1);
      Tensor* pv = a.output(2);
      thread_local std::vector<float> kv;  // keys/values when no present output holds them
      if (pk == nullptr || pv == nullptr) {
        kv.resize(static_cast<size_t>(2 * g.B * N * T * H));
      }
      float* k_dst = pk ? pk->as<float>() : kv.data();
      float* v_dst = pv ? pv->as<float>() : kv.data() + g.B * N * T * H;
      gather_kv(g, a, k_dst, v_dst);
      K = k_dst;
      V = v_dst;
    } else {
      K = a.in[1]->as<const float>();
      V = a.in[2]->as<const float>();
    }
    const float* q = a.in[0]->as<const float>();
    const Tensor* mask = a.input(4);
    const Tensor* bias = a.input(5);
    const float scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(H));
    float* out = a.out[0]->as<float>();
    const int64_t tasks = g.B * N * S;
    const int64_t parts =
        std::min<int64_t>(tasks, g.B * N * S * T * H < 32 * 1024 ? 1 : ctx.pool.num_threads());
    std::vector<float>& scratch = score_scratch();
    if (scratch.size() < static_cast<size_t>(parts * T)) scratch.resize(static_cast<size_t>(parts * T));
    ctx.pool.parallel_for(parts, [&](int64_t part) {
      float* sc = scratch.data() + part * T;
      for (int64_t t = part; t < tasks; t += parts) {
        const int64_t s = t % S, n = (t / S) % N, b = t / (S * N);
        const float* qr = q + (b * S + s) * N * H + n * H;
        const float* Kh = K + (b * N + n) * T * H;
        const float* Vh = V + (b * N + n) * T * H;
        const int64_t end = at_.causal ? T - S + s + 1 : T;
        const float* brow = nullptr;
        if (bias) {
          const Shape& bs = bias->shape;
          brow =
              bias->as<const float>() + (((bs[0] == 1 ? 0 : b) * bs[1] + (bs[1] == 1 ? 0 : n)) * S + s) * T;
        }
        for (int64_t j = 0; j < end; ++j) {
          float v = scale * kernels::vec_dot(qr, Kh + j * H, H);
          if (brow) v += brow[j];
          if (mask && read_int(*mask, b * T + j) == 0) v += at_.mask_filter;
          sc[j] = v;
        }
        kernels::vec_softmax(sc, end);
        float* o = out + (b * S + s) * N * H + n * H;
        std::fill(o, o + H, 0.0f);
        for (int64_t j = 0; j < end; ++j) kernels::vec_axpy(sc[j], Vh + j * H, o, H);
      }
    });
  }

 private:
  // The geometry of one run, from the input shapes.
  struct Geometry {
    int64_t B = 0, S = 0, H = 0, L = 0, P = 0, T = 0;
    bool k4 = false;
  };

  Geometry geometry(const OpArgs& a) const {
    Geometry g;
    const Shape& q = a.in[0]->shape;
    NBITS_CHECK(q.rank == 3, where_, ": query must be [B,S,hidden], got ", q.str());
    g.B = q[0];
    g.S = q[1];
    const int64_t N = at_.num_heads;
    NBITS_CHECK(q[2] % N == 0, where_, ": query hidden size ", q[2], " is not a multiple of ", N, " heads");
    g.H = q[2] / N;
    const Shape& k = a.in[1]->shape;
    const Shape& v = a.in[2]->shape;
    g.k4 = k.rank == 4;
    NBITS_CHECK(k == v, where_, ": key ", k.str(), " and value ", v.str(), " differ");
    if (g.k4) {
      NBITS_CHECK(k[0] == g.B && k[1] == N && k[3] == g.H, where_, ": key must be [", g.B, ",", N, ",L,", g.H,
                  "], got ", k.str());
    } else {
      NBITS_CHECK(k.rank == 3 && k[0] == g.B && k[2] == N * g.H, where_, ": key must be [", g.B, ",L,",
                  N * g.H, "], got ", k.str());
    }
    g.L = g.k4 ? k[2] : k[1];
    g.P = 0;
    if (const Tensor* pk = a.input(6)) {
      NBITS_CHECK(!g.k4, where_, ": past_key with a 4-D key is not supported");
      const Shape& p = pk->shape;
      NBITS_CHECK(p.rank == 4 && p[0] == g.B && p[1] == N && p[3] == g.H && a.in[7]->shape == p, where_,
                  ": past key/value must be [", g.B, ",", N, ",P,", g.H, "], got ", p.str());
      g.P = p[2];
    }
    g.T = g.P + g.L;
    if (const Tensor* m = a.input(4)) {
      NBITS_CHECK(m->shape.rank == 2 && m->shape[0] == g.B && m->shape[1] == g.T, where_,
                  ": key_padding_mask must be [", g.B, ",", g.T, "], got ", m->shape.str());
    }
    if (const Tensor* bias = a.input(5)) {
      const Shape& s = bias->shape;
      NBITS_CHECK(
          s.rank == 4 && (s[0] == 1 || s[0] == g.B) && (s[1] == 1 || s[1] == N) && s[2] == g.S && s[3] == g.T,
          where_, ": attention_bias must be [", g.B, "|1,", N, "|1,", g.S, ",", g.T, "], got ", s.str());
    }
    return g;
  }

  // present = [past ; new] as [B, N, T, H].
  void gather_kv(const Geometry& g, const OpArgs& a, float* k_dst, float* v_dst) const {
    const int64_t N = at_.num_heads, H = g.H, T = g.T;
    for (int which = 0; which < 2; ++which) {
      float* dst = which == 0 ? k_dst : v_dst;
      const Tensor* past = a.input(which == 0 ? 6 : 7);
      const float* src = a.in[which == 0 ? 1 : 2]->as<const float>();
      for (int64_t b = 0; b < g.B; ++b)
        for (int64_t n = 0; n < N; ++n) {
          float* d = dst + (b * N + n) * T * H;
          if (past) std::memcpy(d, past->as<const float>() + (b * N + n) * g.P * H, g.P * H * sizeof(float));
          d += g.P * H;
          if (g.k4) {
            std::memcpy(d, src + (b * N + n) * g.L * H, g.L * H * sizeof(float));
          } else {
            for (int64_t l = 0; l < g.L; ++l)
              std::memcpy(d + l * H, src + ((b * g.L + l) * N + n) * H, H * sizeof(float));
          }
        }
    }
  }

  std::string where_;
  MhaAttrs at_;
};

}  // namespace

std::unique_ptr<Op> make_multi_head_attention(OpBuild& b) {
  const onnx::Node& n = b.node;
  MhaAttrs at;
  at.num_heads = n.attr_int_required("num_heads");
  b.check(at.num_heads > 0, "num_heads=", at.num_heads, " must be positive");
  at.scale = n.attr_float("scale", 0.0f);
  at.mask_filter = n.attr_float("mask_filter_value", -10000.0f);
  at.causal = n.attr_int("unidirectional", 0) != 0;
  b.require_type(0, {DType::kF32}, "query");
  b.check(b.has_input(1) && b.has_input(2), "packed QKV (no key/value inputs) is not supported");
  b.require_type(1, {DType::kF32}, "key");
  b.require_type(2, {DType::kF32}, "value");
  b.check(!b.has_input(3), "input 3 (bias) is not supported");
  if (b.has_input(4)) b.require_type(4, {DType::kI32, DType::kI64}, "key_padding_mask");
  if (b.has_input(5)) b.require_type(5, {DType::kF32}, "attention_bias");
  b.check(b.has_input(6) == b.has_input(7), "past_key and past_value must both be given or both be empty");
  if (b.has_input(6)) {
    b.require_type(6, {DType::kF32}, "past_key");
    b.require_type(7, {DType::kF32}, "past_value");
  }
  static const char* const kUnsupported[] = {"past_sequence_length", "cache_indirection"};
  for (size_t i = 8; i < n.inputs.size(); ++i)
    b.check(!b.has_input(i), "input ", i, " (", i < 10 ? kUnsupported[i - 8] : "?", ") is not supported");
  b.check(!n.has_output(3), "output 3 (qk) is not supported");
  b.set_outputs(DType::kF32);
  return std::make_unique<MultiHeadAttentionOp>(b.where(), at);
}

}  // namespace nbits::ops
