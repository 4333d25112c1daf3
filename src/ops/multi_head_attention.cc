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

  void infer(const OpArgs& a) override {
    const Shape& q = a.in[0]->shape;
    NBITS_CHECK(q.rank == 3, where_, ": query must be [B,S,hidden], got ", q.str());
    B_ = q[0];
    S_ = q[1];
    const int64_t N = at_.num_heads;
    NBITS_CHECK(q[2] % N == 0, where_, ": query hidden size ", q[2], " is not a multiple of ", N, " heads");
    H_ = q[2] / N;
    const Shape& k = a.in[1]->shape;
    const Shape& v = a.in[2]->shape;
    k4_ = k.rank == 4;
    NBITS_CHECK(k == v, where_, ": key ", k.str(), " and value ", v.str(), " differ");
    if (k4_) {
      NBITS_CHECK(k[0] == B_ && k[1] == N && k[3] == H_, where_, ": key must be [", B_, ",", N, ",L,", H_,
                  "], got ", k.str());
    } else {
      NBITS_CHECK(k.rank == 3 && k[0] == B_ && k[2] == N * H_, where_, ": key must be [", B_, ",L,", N * H_,
                  "], got ", k.str());
    }
    L_ = k4_ ? k[2] : k[1];
    P_ = 0;
    if (const Tensor* pk = a.input(6)) {
      NBITS_CHECK(!k4_, where_, ": past_key with a 4-D key is not supported");
      const Shape& p = pk->shape;
      NBITS_CHECK(p.rank == 4 && p[0] == B_ && p[1] == N && p[3] == H_ && a.in[7]->shape == p, where_,
                  ": past key/value must be [", B_, ",", N, ",P,", H_, "], got ", p.str());
      P_ = p[2];
    }
    T_ = P_ + L_;
    if (const Tensor* m = a.input(4)) {
      NBITS_CHECK(m->shape.rank == 2 && m->shape[0] == B_ && m->shape[1] == T_, where_,
                  ": key_padding_mask must be [", B_, ",", T_, "], got ", m->shape.str());
    }
    if (const Tensor* bias = a.input(5)) {
      const Shape& s = bias->shape;
      NBITS_CHECK(
          s.rank == 4 && (s[0] == 1 || s[0] == B_) && (s[1] == 1 || s[1] == N) && s[2] == S_ && s[3] == T_,
          where_, ": attention_bias must be [", B_, "|1,", N, "|1,", S_, ",", T_, "], got ", s.str());
    }
    a.out[0]->shape = Shape{B_, S_, N * H_};
    for (size_t i = 1; i <= 2; ++i)
      if (Tensor* t = a.output(i)) t->shape = Shape{B_, N, T_, H_};
  }

  void run(const OpArgs& a, RunContext& ctx) override {
    const int64_t N = at_.num_heads, H = H_, S = S_, T = T_;
    // Keys and values as [B, N, T, H]: the present outputs when asked for, else
    // the key/value inputs themselves when they need no concatenation.
    const float *K, *V;
    if (a.output(1) != nullptr || a.output(2) != nullptr || P_ > 0 || !k4_) {
      Tensor* pk = a.output(1);
      Tensor* pv = a.output(2);
      if (pk == nullptr || pv == nullptr) {
        kv_.resize(static_cast<size_t>(2 * B_ * N * T * H));
      }
      float* k_dst = pk ? pk->as<float>() : kv_.data();
      float* v_dst = pv ? pv->as<float>() : kv_.data() + B_ * N * T * H;
      gather_kv(a, k_dst, v_dst);
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
    const int64_t tasks = B_ * N * S;
    const int64_t parts =
        std::min<int64_t>(tasks, B_ * N * S * T * H < 32 * 1024 ? 1 : ctx.pool.num_threads());
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
  // present = [past ; new] as [B, N, T, H].
  void gather_kv(const OpArgs& a, float* k_dst, float* v_dst) const {
    const int64_t N = at_.num_heads, H = H_, T = T_;
    for (int which = 0; which < 2; ++which) {
      float* dst = which == 0 ? k_dst : v_dst;
      const Tensor* past = a.input(which == 0 ? 6 : 7);
      const float* src = a.in[which == 0 ? 1 : 2]->as<const float>();
      for (int64_t b = 0; b < B_; ++b)
        for (int64_t n = 0; n < N; ++n) {
          float* d = dst + (b * N + n) * T * H;
          if (past) std::memcpy(d, past->as<const float>() + (b * N + n) * P_ * H, P_ * H * sizeof(float));
          d += P_ * H;
          if (k4_) {
            std::memcpy(d, src + (b * N + n) * L_ * H, L_ * H * sizeof(float));
          } else {
            for (int64_t l = 0; l < L_; ++l)
              std::memcpy(d + l * H, src + ((b * L_ + l) * N + n) * H, H * sizeof(float));
          }
        }
    }
  }

  std::string where_;
  MhaAttrs at_;
  int64_t B_ = 0, S_ = 0, H_ = 0, L_ = 0, P_ = 0, T_ = 0;
  bool k4_ = false;
  std::vector<float> kv_;  // keys/values when no present output holds them
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
