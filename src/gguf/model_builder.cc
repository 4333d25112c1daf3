#include "gguf/model_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "base/error.h"
#include "gguf/graph_builder.h"
#include "gguf/quant_map.h"
#include "gguf/rope_scaling.h"
#include "gguf/vocab.h"
#include "onnx/wire.h"

namespace nbits::gguf {

using onnx::DataType;

namespace {

constexpr const char* kMs = "com.microsoft";

std::string layer_key(const Hyperparams& hp, const char* key) { return hp.arch + "." + key; }

std::string blk(int64_t l, const char* name) { return "blk." + std::to_string(l) + "." + name; }

// t converted to nbits codes / fp32, then its file pages dropped from the process: the converted
// copy is what the graph holds (a second conversion of the same tensor, the tied embedding, reads
// the file again).
NBitsMatrix convert(const File& f, const TensorInfo& t) {
  NBitsMatrix m = to_nbits(f, t);
  if (f.mapping) f.mapping->release(t.bytes.data(), t.bytes.size());
  return m;
}

// A converted matrix made when the session builds its reader (onnx::Model::deferred): the shape
// now, the conversion then, so the load holds one converted copy at a time, not all of them.
struct LaterNBits {
  NBitsShape shape;
  std::function<NBitsMatrix()> make;
};

// One conversion shared by the initializers (codes, scales, zero points, mins) or the row ranges
// made from it; each takes its part, so the copy is gone once all of them are made.
struct Pending {
  std::function<NBitsMatrix()> make;
  std::optional<NBitsMatrix> m;
  NBitsMatrix& get() {
    if (!m) m = make();
    return *m;
  }
};

std::vector<uint8_t> float_bytes(std::vector<float>&& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  std::vector<float>().swap(v);
  return b;
}

}  // namespace

std::unique_ptr<llm::Generator> load_generator(const std::string& path, const graph::SessionOptions& options,
                                               int64_t max_length) {
  GgufModel g = build_model(File::open(path), 4, max_length);
  return std::make_unique<llm::Generator>(g.config, graph::Session::load(std::move(g.model), options),
                                          max_length);
}

bool is_gguf_path(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

namespace {

// attention.head_count_kv: one count, or one per layer (equal but for lfm2's 0 on its convolution
// layers, which go to hp.conv_layer); the attention layers' count.
int64_t read_head_count_kv(const File& f, Hyperparams& hp) {
  const std::string k = layer_key(hp, "attention.head_count_kv");
  const Value* v = f.find(k);
  if (v == nullptr || v->type != ValueType::kArray) return f.get_int(k).value_or(hp.n_head);
  const std::vector<int64_t> per = f.get_ints(k);
  if (static_cast<int64_t>(per.size()) != hp.n_layer)
    f.fail(k + " has " + std::to_string(per.size()) + " entries for " + std::to_string(hp.n_layer) +
           " layers");
  int64_t n = 0;
  for (const int64_t c : per) {
    if (c < 0 || (c > 0 && n > 0 && c != n) || (c == 0 && hp.arch != "lfm2"))
      f.fail(k + ": per-layer KV head counts must be equal (0 marks an lfm2 convolution layer)");
    if (c > 0) n = c;
    hp.conv_layer.push_back(c == 0);
  }
  if (n == 0) f.fail(k + ": no attention layer");
  return n;
}

}  // namespace

Hyperparams read_hyperparams(const File& f) {
  Hyperparams hp;
  const auto arch = f.get_string("general.architecture");
  if (!arch) f.fail("missing metadata key 'general.architecture'");
  hp.arch = *arch;
  static const char* const kArchs[] = {
      "llama",    "qwen2",  "qwen3",   "phi3",     "gemma",    "gemma2",   "gemma3",     "granite",
      "smollm3",  "olmo2",  "lfm2",    "qwen2moe", "qwen3moe", "olmoe",    "granitemoe", "mistral3",
      "ernie4_5", "exaone", "qwen2vl", "qwen3vl",  "exaone4",  "stablelm", "internlm2",  "gpt-oss"};
  if (std::find(std::begin(kArchs), std::end(kArchs), hp.arch) == std::end(kArchs)) {
    std::string list;
    for (const char* a : kArchs) list += std::string(list.empty() ? "" : ", ") + a;
    f.fail("architecture '" + onnx::wire::printable(hp.arch) + "' is not supported (supported: " + list +
           ")");
  }
  auto key = [&](const char* k) { return layer_key(hp, k); };
  hp.n_layer = f.get_int_required(key("block_count"));
  hp.n_embd = f.get_int_required(key("embedding_length"));
  hp.n_head = f.get_int_required(key("attention.head_count"));
  hp.n_head_kv = read_head_count_kv(f, hp);
  hp.context_length = f.get_int_required(key("context_length"));
  if (hp.n_layer <= 0 || hp.n_layer > 1024 || hp.n_embd <= 0 || hp.n_head <= 0 || hp.n_head_kv <= 0 ||
      hp.n_head % hp.n_head_kv != 0 || hp.context_length <= 0 || hp.context_length > (1 << 24))
    f.fail("inconsistent hyperparameters: block_count " + std::to_string(hp.n_layer) + ", embedding_length " +
           std::to_string(hp.n_embd) + ", head_count " + std::to_string(hp.n_head) + ", head_count_kv " +
           std::to_string(hp.n_head_kv) + ", context_length " + std::to_string(hp.context_length));
  hp.head_dim = f.get_int(key("attention.key_length")).value_or(hp.n_embd / hp.n_head);
  const int64_t v_len = f.get_int(key("attention.value_length")).value_or(hp.head_dim);
  if (v_len != hp.head_dim || hp.head_dim <= 0 || hp.head_dim > 1024 || hp.head_dim % 2 != 0)
    f.fail("attention key_length " + std::to_string(hp.head_dim) + " / value_length " +
           std::to_string(v_len) + " are not supported (equal, even, at most 1024)");
  hp.rope_dim = f.get_int(key("rope.dimension_count")).value_or(hp.head_dim);
  if (hp.rope_dim <= 0 || hp.rope_dim > hp.head_dim || hp.rope_dim % 2 != 0)
    f.fail(key("rope.dimension_count") + " " + std::to_string(hp.rope_dim) + " must be even and at most " +
           std::to_string(hp.head_dim));
  hp.rope_base = f.get_float(key("rope.freq_base")).value_or(10000.0);
  hp.rms_eps = f.get_float(key("attention.layer_norm_rms_epsilon")).value_or(1e-5);
  if (!(hp.rope_base > 0) || !(hp.rms_eps >= 0))
    f.fail("rope.freq_base and layer_norm_rms_epsilon must be positive");
  // Rope scaling: none, linear (positions divided by the factor) or yarn; others refused by name.
  const std::string scaling = f.get_string(key("rope.scaling.type")).value_or("none");
  if (scaling == "linear" || scaling == "yarn") {
    hp.rope_linear_factor = f.get_float(key("rope.scaling.factor")).value_or(1.0);
  } else if (scaling != "none") {
    f.fail(key("rope.scaling.type") + " '" + onnx::wire::printable(scaling) +
           "' is not supported (none, linear or yarn)");
  }
  if (const auto s = f.get_float(key("rope.scale_linear"))) hp.rope_linear_factor = *s;
  if (!(hp.rope_linear_factor > 0) || !std::isfinite(hp.rope_linear_factor))
    f.fail("rope scaling factor must be positive");
  const bool llama_like = hp.arch == "llama" || hp.arch == "granite" || hp.arch == "mistral3" ||
                          hp.arch == "exaone" || hp.arch == "exaone4";
  hp.rope_freqs = f.tensor("rope_freqs.weight") != nullptr;
  if (hp.rope_freqs && !llama_like)
    f.fail(
        "tensor 'rope_freqs.weight' (llama 3 rope scaling) is supported for llama, granite and mistral3 "
        "only");
  hp.rope_attn_factor = f.get_float(key("rope.scaling.attn_factor")).value_or(1.0);
  if (!(hp.rope_attn_factor > 0)) f.fail(key("rope.scaling.attn_factor") + " must be positive");
  read_yarn(f, hp, scaling == "yarn");
  if (hp.arch == "qwen2vl" || hp.arch == "qwen3vl") read_mrope_text(f, hp);
  const bool long_f = f.tensor("rope_factors_long.weight") != nullptr;
  const bool short_f = f.tensor("rope_factors_short.weight") != nullptr;
  if (long_f != short_f)
    f.fail("tensors 'rope_factors_long.weight' and 'rope_factors_short.weight' come in pairs");
  if (long_f && hp.arch != "phi3") f.fail("rope_factors_long/short (LongRoPE) are supported for phi3 only");
  hp.rope_factors = long_f;
  hp.rope_orig_context = f.get_int(key("rope.scaling.original_context_length")).value_or(hp.context_length);
  // convert_hf_to_gguf.py permutes the q/k rows of arch llama for ggml's "normal" rope,
  // which rotates adjacent pairs; qwen2/qwen3/phi3/gemma3 use the NEOX (half-split) rope.
  hp.rope_interleaved = hp.arch == "llama" || hp.arch == "granite" || hp.arch == "granitemoe" ||
                        hp.arch == "smollm3" || hp.arch == "mistral3" || hp.arch == "ernie4_5" ||
                        hp.arch == "internlm2";
  // q/k/v biases: always (qwen2), or where the file has them (ernie4_5, exaone: llama's graph with
  // optional biases).
  const bool optional_biases =
      hp.arch == "ernie4_5" || hp.arch == "exaone" || hp.arch == "stablelm" || hp.arch == "gpt-oss";
  hp.qkv_bias = hp.arch == "qwen2" || hp.arch == "qwen2moe" || hp.arch == "qwen2vl" ||
                (optional_biases && f.tensor("blk.0.attn_q.bias") != nullptr);
  hp.qk_norm = hp.arch == "qwen3" || hp.arch == "qwen3vl" || hp.arch == "gemma3" || hp.arch == "qwen3moe" ||
               hp.arch == "olmoe" || hp.arch == "olmo2" || hp.arch == "lfm2" || hp.arch == "exaone4";
  hp.qk_norm_full = hp.arch == "olmoe" || hp.arch == "olmo2";
  // Experts: llama.cpp's MoE architectures, and llama with expert_count > 0 (Mixtral).
  const bool moe_arch = hp.arch == "qwen2moe" || hp.arch == "qwen3moe" || hp.arch == "olmoe" ||
                        hp.arch == "granitemoe" || hp.arch == "gpt-oss";
  hp.n_expert = f.get_int(key("expert_count")).value_or(0);
  hp.n_expert_used = f.get_int(key("expert_used_count")).value_or(0);
  if (!moe_arch && hp.arch != "llama" && hp.n_expert != 0)
    f.fail(key("expert_count") + " " + std::to_string(hp.n_expert) +
           ": mixture-of-experts layers are supported for llama, qwen2moe, qwen3moe, olmoe, granitemoe and "
           "gpt-oss");
  if (hp.arch == "mistral3") read_attn_temperature(f, hp);
  if (moe_arch || hp.n_expert != 0) {
    if (hp.n_expert <= 0 || hp.n_expert > 4096)
      f.fail(key("expert_count") + " " + std::to_string(hp.n_expert) + " must be in [1, 4096]");
    if (hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert)
      f.fail(key("expert_used_count") + " " + std::to_string(hp.n_expert_used) +
             " must be in [1, expert_count " + std::to_string(hp.n_expert) + "]");
    hp.moe_normalize = hp.arch == "qwen3moe" || hp.arch == "granitemoe" || hp.arch == "llama";
    hp.moe_oai = hp.arch == "gpt-oss";
  }
  hp.fused_gate_up = hp.arch == "phi3";
  hp.gemma = hp.arch == "gemma" || hp.arch == "gemma2" || hp.arch == "gemma3";
  hp.pre_norms = hp.arch != "olmo2" && hp.arch != "exaone4";
  hp.post_norms = hp.arch == "gemma2" || hp.arch == "gemma3" || hp.arch == "olmo2" || hp.arch == "exaone4";
  if (hp.arch == "smollm3") hp.nope_period = 4;  // llama.cpp's n_no_rope_layer_step, fixed for smollm3
  hp.attn_scale = 1.0 / std::sqrt(static_cast<double>(hp.head_dim));
  // Sliding-window layers where attention.sliding_window > 0 (gemma3, olmo2): layer l is local when
  // l % sliding_window_pattern < pattern - 1, with rope.freq_base_swa and no rope scaling.
  const auto read_swa = [&](int64_t period, double base_swa) {
    hp.swa_window = f.get_int(key("attention.sliding_window")).value_or(0);
    if (hp.swa_window < 0) f.fail(key("attention.sliding_window") + " must not be negative");
    if (hp.swa_window == 0) return;
    hp.swa_period = f.get_int(key("attention.sliding_window_pattern")).value_or(period);
    if (hp.swa_period < 1) f.fail(key("attention.sliding_window_pattern") + " must be positive");
    hp.rope_base_swa = f.get_float(key("rope.freq_base_swa")).value_or(base_swa);
    if (!(hp.rope_base_swa > 0)) f.fail(key("rope.freq_base_swa") + " must be positive");
  };
  if (hp.arch == "gemma2") {
    // llama.cpp's gemma2: every even layer sees the last sliding_window (default 4096) keys, with
    // the global rope; q.k soft-capped (attn_logit_softcapping, default 50) and the logits
    // (final_logit_softcapping, default 30); the 27B (46 layers) scales q by 1/sqrt(n_embd/n_head).
    if (hp.n_layer == 46) hp.attn_scale = 1.0 / std::sqrt(static_cast<double>(hp.n_embd / hp.n_head));
    hp.swa_window = f.get_int(key("attention.sliding_window")).value_or(4096);
    if (hp.swa_window < 0) f.fail(key("attention.sliding_window") + " must not be negative");
    hp.swa_period = 2;
    hp.rope_base_swa = hp.rope_base;
    hp.attn_softcap = f.get_float(key("attn_logit_softcapping")).value_or(50.0);
    hp.final_softcap = f.get_float(key("final_logit_softcapping")).value_or(30.0);
    if (!(hp.attn_softcap >= 0) || !(hp.final_softcap >= 0))
      f.fail(key("attn_logit_softcapping") + " and final_logit_softcapping must not be negative");
    if (hp.rope_linear_factor != 1.0) f.fail("rope scaling is not supported for gemma2");
  } else if (hp.arch == "granite" || hp.arch == "granitemoe") {
    // llama.cpp's granite: the llama graph with four multipliers, each read as written (0 or
    // absent: no scaling, and attention.scale 0 keeps 1/sqrt(head_dim)).
    const auto multiplier = [&](const char* k, double dflt) {
      const double v = f.get_float(key(k)).value_or(dflt);
      if (!(v >= 0) || !std::isfinite(v)) f.fail(key(k) + " must be a finite non-negative number");
      return v;
    };
    hp.embedding_scale = multiplier("embedding_scale", 1.0);
    hp.residual_scale = multiplier("residual_scale", 1.0);
    hp.logit_scale = multiplier("logit_scale", 1.0);
    if (const double a = multiplier("attention.scale", 0.0); a > 0) hp.attn_scale = a;
    if (hp.embedding_scale == 0) hp.embedding_scale = 1.0;
    if (hp.residual_scale == 0) hp.residual_scale = 1.0;
    if (hp.logit_scale == 0) hp.logit_scale = 1.0;
  } else if (hp.arch == "gemma3") {
    // llama.cpp: gemma3 27B (62 layers) scales by n_embd / n_head instead of the head size.
    if (hp.n_layer == 62) hp.attn_scale = 1.0 / std::sqrt(static_cast<double>(hp.n_embd / hp.n_head));
    read_swa(6, 10000.0);
    hp.final_softcap = f.get_float(key("final_logit_softcapping")).value_or(0.0);
    if (!(hp.final_softcap >= 0)) f.fail(key("final_logit_softcapping") + " must not be negative");
  } else if (hp.arch == "lfm2") {
    // llama.cpp's lfm2: shortconv.l_cache taps (3 in LFM2 and LFM2.5); the final norm's tensor is
    // token_embd_norm. Its sliding-window variant is not supported.
    hp.conv_taps = f.get_int_required(key("shortconv.l_cache"));
    if (hp.conv_taps < 2 || hp.conv_taps > 64)
      f.fail(key("shortconv.l_cache") + " " + std::to_string(hp.conv_taps) + " must be in [2, 64]");
    if (f.get_int(key("attention.sliding_window")).value_or(0) > 0)
      f.fail(key("attention.sliding_window") + " > 0 (LFM2 with sliding-window attention) is not supported");
    hp.output_norm = "token_embd_norm.weight";
  } else if (hp.arch == "stablelm") {
    // llama.cpp's stablelm: LayerNorms with biases (attention.layer_norm_epsilon) before attention,
    // FFN and output; StableLM 2 12B's per-head q/k LayerNorms and parallel residual are not built.
    hp.layer_norm = true;
    const auto eps = f.get_float(key("attention.layer_norm_epsilon"));
    if (!eps) f.fail("missing metadata key '" + key("attention.layer_norm_epsilon") + "'");
    hp.rms_eps = *eps;
    if (!(hp.rms_eps >= 0)) f.fail(key("attention.layer_norm_epsilon") + " must not be negative");
    if (f.tensor(blk(0, "attn_q_norm.weight")) != nullptr || f.tensor(blk(0, "ffn_norm.weight")) == nullptr)
      f.fail("stablelm with per-head q/k norms and a parallel residual (StableLM 2 12B) is not supported");
  } else if (hp.arch == "exaone4") {
    // llama.cpp's exaone4: olmo2's norm placement with per-head q/k norms; with sliding windows (the
    // 32B) its global layers have no rope, which nbits does not build.
    if (f.get_int(key("attention.sliding_window")).value_or(0) > 0)
      f.fail(key("attention.sliding_window") + " > 0 (EXAONE 4 with sliding-window layers) is not supported");
  } else if (hp.arch == "gpt-oss") {
    // llama.cpp's openai-moe: every other layer local (sliding_window_pattern 2: the even ones) with
    // the global rope, YaRN included (its freq_scale_swa is the global one); attention sinks, a
    // bias on every projection, and the FFN's pre-norm named post_attention_norm.
    read_swa(2, hp.rope_base);
    hp.swa_rope_scaled = true;
    hp.o_bias = hp.attn_sinks = true;
    hp.ffn_norm = "post_attention_norm.weight";
  } else if (hp.arch == "olmo2") {
    // llama.cpp's olmo2 (OLMo 3 files too): pattern 4 by default; its graph ropes the local layers
    // with the global base (as OLMo 3 does), whatever rope.freq_base_swa says, but unscaled.
    read_swa(4, hp.rope_base);
    hp.rope_base_swa = hp.rope_base;
  }
  // phi3's sliding_window is ignored, as llama.cpp does ("Phi SWA is currently disabled").

  const TensorInfo* emb = f.tensor("token_embd.weight");
  if (emb == nullptr) f.fail("missing tensor 'token_embd.weight'");
  if (emb->ne[0] != hp.n_embd || emb->n_dims != 2)
    f.fail("tensor 'token_embd.weight' " + emb->shape_str() + " does not match embedding_length " +
           std::to_string(hp.n_embd));
  hp.n_vocab = emb->ne[1];
  hp.tied_output = f.tensor("output.weight") == nullptr;
  const TensorInfo* up = f.tensor(blk(0, "ffn_up.weight"));
  hp.n_ff = up != nullptr ? up->ne[1] / (hp.fused_gate_up ? 2 : 1) : 0;
  if (const TensorInfo* e = f.tensor(blk(0, "ffn_up_exps.weight")); e != nullptr && hp.n_expert > 0)
    hp.n_ff = e->ne[1];  // each expert's
  return hp;
}

int64_t file_bytes_per_token(const File& f) {
  const bool tied = f.tensor("output.weight") == nullptr;
  // Expert tensors [K, N, n_expert]: a token reads expert_used_count of them.
  double used = 1.0;
  if (const auto arch = f.get_string("general.architecture")) {
    const int64_t n = f.get_int(*arch + ".expert_count").value_or(0);
    const int64_t k = f.get_int(*arch + ".expert_used_count").value_or(0);
    if (n > 0 && k > 0 && k <= n) used = static_cast<double>(k) / static_cast<double>(n);
  }
  double n = 0;
  for (const TensorInfo& t : f.tensors())
    if (t.n_dims >= 2 && (tied || t.name != "token_embd.weight"))
      n += static_cast<double>(t.bytes.size()) * (t.n_dims == 3 ? used : 1.0);
  return static_cast<int64_t>(n);
}

std::vector<std::string> unsupported_tensors(const File& f) {
  std::vector<std::string> r;
  for (const TensorInfo& t : f.tensors())
    if (!widens_to_float(t.type)) r.push_back(onnx::wire::printable(t.name) + ": " + type_name(t.type));
  return r;
}

namespace {

class Builder {
 public:
  Builder(std::shared_ptr<const File> f, const Hyperparams& hp, onnx::Model& m, int level, int64_t capacity)
      : file_(std::move(f)), f_(*file_), hp_(hp), g_(m), level_(level), capacity_(capacity) {}

  void build();

 private:
  const TensorInfo& need(const std::string& name, std::vector<int64_t> shape) const {
    const TensorInfo* t = f_.tensor(name);
    if (t == nullptr) f_.fail("missing tensor '" + name + "'");
    bool ok = t->n_dims == shape.size();
    for (size_t d = 0; ok && d < shape.size(); ++d) ok = t->ne[d] == shape[d];
    if (!ok) {
      std::string want = "[";
      for (size_t d = 0; d < shape.size(); ++d) want += (d ? ", " : "") + std::to_string(shape[d]);
      f_.fail("tensor '" + name + "' has shape " + t->shape_str() + ", expected " + want + "]");
    }
    return *t;
  }

  // An F32 vector (norm weights, biases): viewed in the mapping, or widened.
  std::string vec(const TensorInfo& t) {
    if (t.type == GgmlType::kF32) return g_.view(t.name, DataType::kFloat, {t.numel()}, t.bytes);
    return g_.own_floats(t.name, {t.numel()}, float_copy(t));
  }

  // y = x @ concat(ws)^T (+ bias): MatMulNBits when every w maps to it with the
  // same format, else fp32 MatMul over the widened, transposed weights.
  std::string matmul(const std::string& x, const std::vector<const TensorInfo*>& ws,
                     const std::vector<const TensorInfo*>& biases, const std::string& name) {
    bool nbits = true;
    for (const TensorInfo* w : ws) nbits = nbits && maps_to_nbits(w->type) && w->type == ws[0]->type;
    std::string bias;
    if (!biases.empty()) {
      std::vector<float> b;
      for (const TensorInfo* t : biases) {
        const std::vector<float> v = float_copy(*t);
        b.insert(b.end(), v.begin(), v.end());
      }
      bias = g_.own_floats(name + ".bias", {static_cast<int64_t>(b.size())}, b);
    }
    if (nbits) return matmul_nbits(x, later_of(ws), bias, name);
    const int64_t K = ws[0]->ne[0];
    int64_t N = 0;
    for (const TensorInfo* w : ws) N += w->ne[1];
    std::vector<float> wt(static_cast<size_t>(K * N));  // [K, N]
    int64_t n0 = 0;
    for (const TensorInfo* w : ws) {
      const std::vector<float> v = float_copy(*w);
      for (int64_t n = 0; n < w->ne[1]; ++n)
        for (int64_t k = 0; k < K; ++k)
          wt[static_cast<size_t>(k * N + n0 + n)] = v[static_cast<size_t>(n * K + k)];
      n0 += w->ne[1];
    }
    const std::string W = g_.own_floats(name + ".weight", {K, N}, wt);
    std::string y = g_.node("MatMul", "", name, {x, W}).outputs[0];
    if (!bias.empty()) y = g_.node("Add", "", name + "/Add", {y, bias}).outputs[0];
    return y;
  }

  LaterNBits later(const TensorInfo& t) const {
    return {nbits_shape(f_, t), [file = file_, t] { return convert(*file, t); }};
  }
  // The rows of ws, concatenated (q, k and v as one matrix).
  LaterNBits later_of(const std::vector<const TensorInfo*>& ws) const {
    if (ws.size() == 1) return later(*ws[0]);
    LaterNBits r = later(*ws[0]);
    std::vector<TensorInfo> ts;
    for (const TensorInfo* w : ws) ts.push_back(*w);
    for (size_t i = 1; i < ws.size(); ++i) r.shape.N += nbits_shape(f_, *ws[i]).N;
    r.make = [file = file_, ts] {
      NBitsMatrix m = convert(*file, ts[0]);
      for (size_t i = 1; i < ts.size(); ++i) append_rows(m, convert(*file, ts[i]));
      return m;
    };
    return r;
  }

  struct NBitsInits {
    std::string B, scales, zp, mins;
    int64_t N = 0, K = 0;
    int bits = 0, block = 0;
  };
  // The initializers of a MatMulNBits (or GatherBlockQuantized) over src, made when first read.
  NBitsInits add_nbits(LaterNBits src, const std::string& name, bool two_d_codes) {
    const NBitsShape& m = src.shape;
    NBitsInits r;
    r.N = m.N, r.K = m.K, r.bits = m.bits, r.block = m.block_size;
    const int64_t kb = m.k_blocks();
    std::vector<int64_t> bdims = two_d_codes ? std::vector<int64_t>{m.N, kb * m.blob_bytes()}
                                             : std::vector<int64_t>{m.N, kb, m.blob_bytes()};
    auto p = std::make_shared<Pending>(Pending{std::move(src.make), std::nullopt});
    r.B = g_.own_later(name + ".qweight", DataType::kUint8, bdims, [p] { return std::move(p->get().codes); });
    r.scales = g_.own_later(name + ".scales", DataType::kFloat, {m.N, kb},
                            [p] { return float_bytes(std::move(p->get().scales)); });
    if (m.has_zero_points)
      r.zp = g_.own_later(name + ".zero_points", DataType::kUint8, {m.N, m.zp_row_bytes()},
                          [p] { return std::move(p->get().zero_points); });
    if (m.has_mins)
      r.mins = g_.own_later(name + ".mins", DataType::kFloat, {m.N * kb},
                            [p] { return float_bytes(std::move(p->get().mins)); });
    return r;
  }

  std::string matmul_nbits_node(const std::string& x, const NBitsInits& w, const std::string& bias,
                                const std::string& name, const std::string& out = "") {
    std::vector<std::string> in = {x, w.B, w.scales, w.zp, "", bias, w.mins};
    while (in.back().empty()) in.pop_back();
    onnx::Node& n = g_.node("MatMulNBits", kMs, name, in);
    if (!out.empty()) n.outputs[0] = out;
    GraphBuilder::attr(n, "K", w.K);
    GraphBuilder::attr(n, "N", w.N);
    GraphBuilder::attr(n, "bits", static_cast<int64_t>(w.bits));
    GraphBuilder::attr(n, "block_size", static_cast<int64_t>(w.block));
    GraphBuilder::attr(n, "accuracy_level", static_cast<int64_t>(level_));
    return n.outputs[0];
  }

  std::string matmul_nbits(const std::string& x, LaterNBits m, const std::string& bias,
                           const std::string& name) {
    return matmul_nbits_node(x, add_nbits(std::move(m), name, false), bias, name);
  }

  // x * c in fp32 (llama.cpp's ggml_scale).
  std::string scaled(const std::string& x, double c, const std::string& name) {
    const std::string k = g_.own_floats(name + "/c", {}, {static_cast<float>(c)});
    return g_.node("Mul", "", name + "/Mul", {x, k}).outputs[0];
  }

  // The bias of a model's pre-norm whose weight is tensor `weight` (LayerNorm models: stablelm), else "".
  std::string norm_bias(const std::string& weight) {
    if (!hp_.layer_norm) return "";
    const std::string b = weight.substr(0, weight.size() - std::string(".weight").size()) + ".bias";
    return vec(need(b, {hp_.n_embd}));
  }

  // RMS norm, or with a bias a LayerNorm (LayerNormalization: mean removed, plus the bias).
  std::string rms_norm(const std::string& x, const std::string& w, const std::string& name,
                       const std::string& bias = "") {
    if (!bias.empty()) {
      onnx::Node& n = g_.node("LayerNormalization", "", name, {x, w, bias});
      GraphBuilder::attr(n, "epsilon", static_cast<float>(hp_.rms_eps));
      GraphBuilder::attr(n, "axis", int64_t{-1});
      GraphBuilder::attr(n, "stash_type", int64_t{1});
      return n.outputs[0];
    }
    onnx::Node& n = g_.node("SimplifiedLayerNormalization", "", name, {x, w});
    GraphBuilder::attr(n, "epsilon", static_cast<float>(hp_.rms_eps));
    GraphBuilder::attr(n, "axis", int64_t{-1});
    GraphBuilder::attr(n, "stash_type", int64_t{1});
    return n.outputs[0];
  }

  // SkipSimplifiedLayerNormalization: {normed, residual sum} (sum "" when not wanted).
  // With a bias, SkipLayerNormalization (gamma w, beta bias).
  std::pair<std::string, std::string> skip_norm(const std::string& x, const std::string& skip,
                                                const std::string& w, const std::string& name, bool want_sum,
                                                const std::string& bias = "") {
    onnx::Node& n =
        bias.empty() ? g_.node("SkipSimplifiedLayerNormalization", kMs, name, {x, skip, w}, want_sum ? 4 : 1)
                     : g_.node("SkipLayerNormalization", kMs, name, {x, skip, w, bias}, want_sum ? 4 : 1);
    if (want_sum) n.outputs[1] = n.outputs[2] = "";
    GraphBuilder::attr(n, "epsilon", static_cast<float>(hp_.rms_eps));
    return {n.outputs[0], want_sum ? n.outputs[3] : ""};
  }

  // Per-head RMS norm of x [B, S, heads*H] (qwen3 q/k norms).
  std::string head_norm(const std::string& x, int64_t heads, const TensorInfo& w, const std::string& name) {
    const std::string shape_h = g_.own_int64(name + ".shape_h", {3}, {0, -1, hp_.head_dim});
    const std::string shape_o = g_.own_int64(name + ".shape_o", {3}, {0, -1, heads * hp_.head_dim});
    const std::string r = g_.node("Reshape", "", name + "/Reshape_1", {x, shape_h}).outputs[0];
    const std::string n = rms_norm(r, vec(w), name + "/SimplifiedLayerNormalization");
    return g_.node("Reshape", "", name + "/Reshape_2", {n, shape_o}).outputs[0];
  }

  // cos/sin tables [positions, rope_dim / 2] of one rope (base, linear factor); returns {cos, sin}.
  std::pair<std::string, std::string> rope_caches(const std::string& name, double base, bool scaled);
  std::string temperature(const std::string& q, int64_t l);
  // The MatMul of x by rows [n0, n0 + n) of each part of w (w's rows split in order).
  std::vector<std::string> matmul_parts(const std::string& x, const TensorInfo& w,
                                        const std::vector<int64_t>& parts,
                                        const std::vector<std::string>& names);
  bool is_swa(int64_t l) const { return hp_.swa_window > 0 && l % hp_.swa_period < hp_.swa_period - 1; }
  void mask_inputs();
  std::string embedding();
  std::string attention(int64_t l, const std::string& x);
  std::string short_conv(int64_t l, const std::string& x);
  std::string attention_core(int64_t l, const std::string& q, const std::string& k, const std::string& v);
  std::string mlp(int64_t l, const std::string& x);
  std::string swiglu(const std::string& x, const TensorInfo& gate, const TensorInfo& up,
                     const TensorInfo& down, const std::string& p);
  std::string moe(int64_t l, const std::string& x);
  // A [K, N, n_expert] expert tensor as one matrix of n_expert * N rows.
  LaterNBits experts(const TensorInfo& t) const {
    if (!maps_to_nbits(t.type))
      f_.fail("expert tensor '" + onnx::wire::printable(t.name) + "' has type " + type_name(t.type) +
              ": experts must be quantized (Q4_0 .. Q8_0, K-quants, IQ4, MXFP4, TQ)");
    TensorInfo r = t;
    r.ne[1] = t.ne[1] * t.ne[2];
    r.ne[2] = 1;
    r.n_dims = 2;
    return later(r);
  }
  void lm_head(const std::string& x);

  // t widened to fp32, then its file pages dropped from the process (as convert() does).
  std::vector<float> float_copy(const TensorInfo& t) {
    std::vector<float> v = to_float(f_, t);
    release(t);
    return v;
  }
  void release(const TensorInfo& t) {
    if (f_.mapping) f_.mapping->release(t.bytes.data(), t.bytes.size());
  }

  std::shared_ptr<const File> file_;  // kept by the conversions made later (LaterNBits)
  const File& f_;
  const Hyperparams& hp_;
  GraphBuilder g_;
  int level_;
  int64_t capacity_;
  std::string seqlens_k_, total_len_, cos_, sin_, cos_swa_, sin_swa_;
  std::string temperature_;  // the attention temperature table ("": all 1 over the capacity)
  bool temperature_checked_ = false;
  NBitsInits embd_nbits_;  // the tied table when it is both GatherBlockQuantized data and lm_head
};

std::pair<std::string, std::string> Builder::rope_caches(const std::string& name, double base, bool scaled) {
  const int64_t T = capacity_ > 0 ? std::min(capacity_, hp_.context_length) : hp_.context_length;
  const int64_t half = hp_.rope_dim / 2;
  // LongRoPE divides each frequency by its factor: the long set when the capacity exceeds the
  // original context (llama.cpp: n_ctx_seq > n_ctx_orig_yarn), else the short one. Llama 3's
  // rope_freqs always.
  std::vector<float> factors;
  if (hp_.rope_factors) {
    const bool use_long = (capacity_ > 0 ? capacity_ : hp_.context_length) > hp_.rope_orig_context;
    factors = float_copy(need(use_long ? "rope_factors_long.weight" : "rope_factors_short.weight", {half}));
  } else if (hp_.rope_freqs) {
    factors = float_copy(need("rope_freqs.weight", {half}));
  }
  for (const float v : factors)
    if (!(v > 0) || !std::isfinite(v)) f_.fail("rope frequency factors must be positive and finite");
  const RopeTables r = rope_tables(hp_, T, base, scaled, factors);
  return {g_.own_floats(name + "cos_cache", {T, half}, r.cos),
          g_.own_floats(name + "sin_cache", {T, half}, r.sin)};
}

std::vector<std::string> Builder::matmul_parts(const std::string& x, const TensorInfo& w,
                                               const std::vector<int64_t>& parts,
                                               const std::vector<std::string>& names) {
  std::vector<std::string> out;
  int64_t n0 = 0;
  if (maps_to_nbits(w.type)) {
    const LaterNBits whole = later(w);
    auto p = std::make_shared<Pending>(Pending{whole.make, std::nullopt});
    for (size_t i = 0; i < parts.size(); n0 += parts[i], ++i) {
      LaterNBits part{whole.shape, [p, n0, n = parts[i]] { return take_rows(p->get(), n0, n); }};
      part.shape.N = parts[i];
      out.push_back(matmul_nbits(x, std::move(part), "", names[i]));
    }
    return out;
  }
  const int64_t K = w.ne[0];
  const std::vector<float> v = float_copy(w);
  for (size_t i = 0; i < parts.size(); n0 += parts[i], ++i) {
    const int64_t N = parts[i];
    std::vector<float> wt(static_cast<size_t>(K * N));  // [K, N]
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        wt[static_cast<size_t>(k * N + n)] = v[static_cast<size_t>((n0 + n) * K + k)];
    out.push_back(
        g_.node("MatMul", "", names[i], {x, g_.own_floats(names[i] + ".weight", {K, N}, wt)}).outputs[0]);
  }
  return out;
}

// seqlens_k = sum(attention_mask) - 1 and total_sequence_length, as int32 (the builder's subgraph).
void Builder::mask_inputs() {
  const std::string one1 = g_.own_int64("/model/constants/INT64/[1]", {1}, {1});
  const std::string one = g_.own_int64("/model/constants/INT64/1", {}, {1});
  const std::string p = "/model/attn_mask_reformat/attn_mask_subgraph/";
  onnx::Node& rs = g_.node("ReduceSum", "", p + "ReduceSum", {"attention_mask", one1});
  GraphBuilder::attr(rs, "keepdims", int64_t{0});
  const std::string sum = rs.outputs[0];
  const std::string sub = g_.node("Sub", "", p + "Sub", {sum, one1}).outputs[0];
  onnx::Node& c1 = g_.node("Cast", "", p + "Sub/Cast", {sub});
  GraphBuilder::attr(c1, "to", static_cast<int64_t>(DataType::kInt32));
  seqlens_k_ = c1.outputs[0];
  const std::string shape = g_.node("Shape", "", p + "Shape", {"attention_mask"}).outputs[0];
  onnx::Node& ga = g_.node("Gather", "", p + "Gather", {shape, one});
  GraphBuilder::attr(ga, "axis", int64_t{0});
  const std::string gathered = ga.outputs[0];
  onnx::Node& c2 = g_.node("Cast", "", p + "Gather/Cast", {gathered});
  GraphBuilder::attr(c2, "to", static_cast<int64_t>(DataType::kInt32));
  total_len_ = c2.outputs[0];
}

std::string Builder::embedding() {
  const TensorInfo& e = need("token_embd.weight", {hp_.n_embd, hp_.n_vocab});
  const std::string name = "/model/embed_tokens";
  // Quantized rows: GatherBlockQuantized dequantizes the rows it gathers from the codes, with the
  // zero points and (nbits' internal input 4) the block mins of Q4_1 / Q4_K / Q5_K, so the table
  // stays at the mapped size (Qwen2.5-1.5B's Q4_K: 175 MiB, not an fp32 table of 890 MiB); tied,
  // the same initializers feed the lm_head MatMulNBits.
  if (maps_to_nbits(e.type)) {
    embd_nbits_ = add_nbits(later(e), "token_embd", true);
    std::vector<std::string> in = {embd_nbits_.B, "input_ids", embd_nbits_.scales, embd_nbits_.zp,
                                   embd_nbits_.mins};
    while (in.back().empty()) in.pop_back();
    onnx::Node& n = g_.node("GatherBlockQuantized", kMs, name + "/GatherBlockQuantized", in);
    GraphBuilder::attr(n, "bits", static_cast<int64_t>(embd_nbits_.bits));
    GraphBuilder::attr(n, "block_size", static_cast<int64_t>(embd_nbits_.block));
    GraphBuilder::attr(n, "gather_axis", int64_t{0});
    GraphBuilder::attr(n, "quantize_axis", int64_t{1});
    return n.outputs[0];
  }
  // Otherwise an fp32 table: viewed in the mapping when F32, else widened once.
  const std::string table =
      e.type == GgmlType::kF32
          ? g_.view("token_embd.weight", DataType::kFloat, {hp_.n_vocab, hp_.n_embd}, e.bytes)
          : g_.own_floats("token_embd.weight", {hp_.n_vocab, hp_.n_embd}, float_copy(e));
  return g_.node("Gather", "", name + "/Gather", {table, "input_ids"}).outputs[0];
}

std::string Builder::attention(int64_t l, const std::string& x) {
  if (!hp_.conv_layer.empty() && hp_.conv_layer[static_cast<size_t>(l)]) return short_conv(l, x);
  const int64_t E = hp_.n_embd, H = hp_.head_dim, Nq = hp_.n_head * H, Nkv = hp_.n_head_kv * H;
  const std::string p = "/model/layers." + std::to_string(l) + "/attn/";
  std::string q, k, v;
  if (const TensorInfo* fused = f_.tensor(blk(l, "attn_qkv.weight"))) {  // phi3: one [q; k; v] matrix
    need(fused->name, {E, Nq + 2 * Nkv});
    std::vector<const TensorInfo*> b;
    if (f_.tensor(blk(l, "attn_qkv.bias")) != nullptr) b = {&need(blk(l, "attn_qkv.bias"), {Nq + 2 * Nkv})};
    q = matmul(x, {fused}, b, p + "qkv_proj/MatMul");
    if (hp_.qk_norm) f_.fail("a fused attn_qkv with q/k norms is not supported");
    return attention_core(l, q, k, v);
  }
  const TensorInfo& wq = need(blk(l, "attn_q.weight"), {E, Nq});
  const TensorInfo& wk = need(blk(l, "attn_k.weight"), {E, Nkv});
  const TensorInfo& wv = need(blk(l, "attn_v.weight"), {E, Nkv});
  std::vector<const TensorInfo*> bq, bk, bv;
  if (hp_.qkv_bias) {
    bq = {&need(blk(l, "attn_q.bias"), {Nq})};
    bk = {&need(blk(l, "attn_k.bias"), {Nkv})};
    bv = {&need(blk(l, "attn_v.bias"), {Nkv})};
  }
  if (wq.type == wk.type && wk.type == wv.type) {
    std::vector<const TensorInfo*> b;
    for (auto* t : {&bq, &bk, &bv}) b.insert(b.end(), t->begin(), t->end());
    const std::string qkv = matmul(x, {&wq, &wk, &wv}, b, p + "qkv_proj/MatMul");
    if (hp_.qk_norm) {
      const std::string sizes = g_.own_int64(p + "qkv_proj/split_sizes", {3}, {Nq, Nkv, Nkv});
      onnx::Node& s = g_.node("Split", "", p + "qkv_proj/Split", {qkv, sizes}, 3);
      GraphBuilder::attr(s, "axis", int64_t{-1});
      q = s.outputs[0], k = s.outputs[1], v = s.outputs[2];
    } else {
      q = qkv;
    }
  } else {  // q, k and v of different types: three matmuls
    q = matmul(x, {&wq}, bq, p + "q_proj/MatMul");
    k = matmul(x, {&wk}, bk, p + "k_proj/MatMul");
    v = matmul(x, {&wv}, bv, p + "v_proj/MatMul");
  }
  if (hp_.qk_norm_full) {  // olmoe: one RMS norm over all of q's (k's) heads
    q = rms_norm(q, vec(need(blk(l, "attn_q_norm.weight"), {Nq})), p + "q_norm/SimplifiedLayerNormalization");
    k = rms_norm(k, vec(need(blk(l, "attn_k_norm.weight"), {Nkv})),
                 p + "k_norm/SimplifiedLayerNormalization");
  } else if (hp_.qk_norm) {
    q = head_norm(q, hp_.n_head, need(blk(l, "attn_q_norm.weight"), {H}), p + "q_norm");
    k = head_norm(k, hp_.n_head_kv, need(blk(l, "attn_k_norm.weight"), {H}), p + "k_norm");
  }
  return attention_core(l, q, k, v);
}

// lfm2's gated short convolution (llama.cpp's build_shortconv_block): in_proj to b, c and x, then
// ShortConv (c * conv(b * x), its state in the layer's KV cache slot), then out_proj.
std::string Builder::short_conv(int64_t l, const std::string& x) {
  const int64_t E = hp_.n_embd;
  const std::string L = std::to_string(l), p = "/model/layers." + L + "/conv/";
  const std::string bcx =
      matmul(x, {&need(blk(l, "shortconv.in_proj.weight"), {E, 3 * E})}, {}, p + "in_proj/MatMul");
  const TensorInfo& w = need(blk(l, "shortconv.conv.weight"), {hp_.conv_taps, E});
  const std::string taps = g_.own_floats(p + "conv.weight", {E, hp_.conv_taps}, float_copy(w));
  onnx::Node& n = g_.node("ShortConv", "nbits.internal", p + "ShortConv",
                          {bcx, taps, "", "past_key_values." + L + ".key", "past_key_values." + L + ".value",
                           seqlens_k_, total_len_},
                          3);
  n.outputs[1] = "present." + L + ".key";
  n.outputs[2] = "present." + L + ".value";
  const std::string y = n.outputs[0];
  return matmul(y, {&need(blk(l, "shortconv.out_proj.weight"), {E, E})}, {}, p + "out_proj/MatMul");
}

// q times the attention temperature of its position (mistral3), where the table is not all 1 over
// the capacity; the table is made once and shared by the layers.
std::string Builder::temperature(const std::string& q, int64_t l) {
  if (hp_.attn_temp_scale == 0) return q;
  const int64_t T = capacity_ > 0 ? std::min(capacity_, hp_.context_length) : hp_.context_length;
  if (!temperature_checked_) {
    temperature_checked_ = true;
    const std::vector<float> t = attn_temperature(hp_, T);
    if (!std::all_of(t.begin(), t.end(), [](float v) { return v == 1.0f; }))
      temperature_ = g_.own_floats("attn_temperature", {T}, t);
  }
  if (temperature_.empty()) return q;
  const std::string p = "/model/layers." + std::to_string(l) + "/attn/";
  onnx::Node& n = g_.node("PositionScale", "nbits.internal", p + "PositionScale",
                          {q, temperature_, seqlens_k_, total_len_}, 1);
  GraphBuilder::attr(n, "channels", hp_.n_head * hp_.head_dim);
  return n.outputs[0];
}

// GroupQueryAttention over q (packed qkv when k and v are "") and the output projection.
std::string Builder::attention_core(int64_t l, const std::string& q, const std::string& k,
                                    const std::string& v) {
  const int64_t E = hp_.n_embd, Nq = hp_.n_head * hp_.head_dim;
  const std::string p = "/model/layers." + std::to_string(l) + "/attn/";
  const std::string L = std::to_string(l);
  const bool swa = is_swa(l);
  const bool rope = hp_.nope_period == 0 || (l + 1) % hp_.nope_period != 0;  // smollm3: NoPE layers
  std::vector<std::string> in = {
      temperature(q, l), k,         v, "past_key_values." + L + ".key", "past_key_values." + L + ".value",
      seqlens_k_,        total_len_};
  if (rope) in.insert(in.end(), {swa ? cos_swa_ : cos_, swa ? sin_swa_ : sin_});
  if (hp_.attn_sinks) {  // head_sink, input 11
    in.resize(11, "");
    in.push_back(vec(need(blk(l, "attn_sinks.weight"), {hp_.n_head})));
  }
  onnx::Node& n = g_.node("GroupQueryAttention", kMs, p + "GroupQueryAttention", in, 3);
  n.outputs[1] = "present." + L + ".key";
  n.outputs[2] = "present." + L + ".value";
  GraphBuilder::attr(n, "num_heads", hp_.n_head);
  GraphBuilder::attr(n, "kv_num_heads", hp_.n_head_kv);
  GraphBuilder::attr(n, "scale", static_cast<float>(hp_.attn_scale));
  GraphBuilder::attr(n, "local_window_size", swa ? hp_.swa_window : int64_t{-1});
  GraphBuilder::attr(n, "do_rotary", int64_t{rope ? 1 : 0});
  GraphBuilder::attr(n, "rotary_interleaved", int64_t{hp_.rope_interleaved ? 1 : 0});
  if (hp_.attn_softcap > 0) GraphBuilder::attr(n, "softcap", static_cast<float>(hp_.attn_softcap));
  const std::string att = n.outputs[0];
  std::vector<const TensorInfo*> bias;
  if (hp_.o_bias) bias = {&need(blk(l, "attn_output.bias"), {E})};
  return matmul(att, {&need(blk(l, "attn_output.weight"), {Nq, E})}, bias, p + "o_proj/MatMul");
}

std::string Builder::mlp(int64_t l, const std::string& x) {
  if (hp_.n_expert > 0) return moe(l, x);
  const int64_t E = hp_.n_embd, F = hp_.n_ff;
  const std::string p = "/model/layers." + std::to_string(l) + "/mlp/";
  std::string gate, up;
  if (hp_.fused_gate_up) {  // phi3: ffn_up = [gate; up], split by rows into the two projections
    const std::vector<std::string> gu = matmul_parts(x, need(blk(l, "ffn_up.weight"), {E, 2 * F}), {F, F},
                                                     {p + "gate_proj/MatMul", p + "up_proj/MatMul"});
    gate = gu[0], up = gu[1];
  } else {
    gate = matmul(x, {&need(blk(l, "ffn_gate.weight"), {E, F})}, {}, p + "gate_proj/MatMul");
    up = matmul(x, {&need(blk(l, "ffn_up.weight"), {E, F})}, {}, p + "up_proj/MatMul");
  }
  std::string act;
  if (hp_.gemma) {  // GELU, tanh approximation (ggml_gelu)
    act = g_.node("FastGelu", kMs, p + "act_fn/FastGelu", {gate}).outputs[0];
  } else {
    const std::string sig = g_.node("Sigmoid", "", p + "act_fn/Sigmoid", {gate}).outputs[0];
    act = g_.node("Mul", "", p + "act_fn/Mul", {gate, sig}).outputs[0];
  }
  const std::string h = g_.node("Mul", "", p + "Mul", {act, up}).outputs[0];
  return matmul(h, {&need(blk(l, "ffn_down.weight"), {F, E})}, {}, p + "down_proj/MatMul");
}

// down(silu(x gate^T) * (x up^T)), the SwiGLU FFN (a shared expert).
std::string Builder::swiglu(const std::string& x, const TensorInfo& gate, const TensorInfo& up,
                            const TensorInfo& down, const std::string& p) {
  const std::string g = matmul(x, {&gate}, {}, p + "gate_proj/MatMul");
  const std::string u = matmul(x, {&up}, {}, p + "up_proj/MatMul");
  const std::string sig = g_.node("Sigmoid", "", p + "act_fn/Sigmoid", {g}).outputs[0];
  const std::string act = g_.node("Mul", "", p + "act_fn/Mul", {g, sig}).outputs[0];
  const std::string h = g_.node("Mul", "", p + "Mul", {act, u}).outputs[0];
  return matmul(h, {&down}, {}, p + "down_proj/MatMul");
}

// The routed experts (llama.cpp's build_moe_ffn: softmax router, top-k, SiLU experts), plus the
// shared expert where the file has one (qwen2moe: scaled by sigmoid(x . ffn_gate_inp_shexp)).
std::string Builder::moe(int64_t l, const std::string& x) {
  const int64_t E = hp_.n_embd, X = hp_.n_expert;
  const std::string p = "/model/layers." + std::to_string(l) + "/moe/";
  const TensorInfo* g = f_.tensor(blk(l, "ffn_gate_exps.weight"));
  if (g == nullptr) f_.fail("missing tensor '" + blk(l, "ffn_gate_exps.weight") + "'");
  if (g->n_dims != 3 || g->ne[1] <= 0)
    f_.fail("tensor '" + g->name + "' has shape " + g->shape_str() + ", expected [" + std::to_string(E) +
            ", n_ff, " + std::to_string(X) + "]");
  const int64_t F = g->ne[1];
  const TensorInfo& gate = need(g->name, {E, F, X});
  const TensorInfo& up = need(blk(l, "ffn_up_exps.weight"), {E, F, X});
  const TensorInfo& down = need(blk(l, "ffn_down_exps.weight"), {F, E, X});
  std::vector<const TensorInfo*> router_bias;
  if (hp_.moe_oai) router_bias = {&need(blk(l, "ffn_gate_inp.bias"), {X})};
  const std::string logits =
      matmul(x, {&need(blk(l, "ffn_gate_inp.weight"), {E, X})}, router_bias, p + "router/MatMul");
  std::vector<std::string> in = {x, logits};
  std::vector<NBitsInits> w;
  const char* names[3] = {"gate", "up", "down"};
  for (const TensorInfo* t : {&gate, &up, &down}) {
    w.push_back(add_nbits(experts(*t), p + names[w.size()] + "_experts", false));
    in.insert(in.end(), {w.back().B, w.back().scales, w.back().zp, w.back().mins});
  }
  if (hp_.moe_oai) {  // biases [n_expert, N] of each projection, inputs 14..16
    in.push_back(vec(need(blk(l, "ffn_gate_exps.bias"), {F, X})));
    in.push_back(vec(need(blk(l, "ffn_up_exps.bias"), {F, X})));
    in.push_back(vec(need(blk(l, "ffn_down_exps.bias"), {E, X})));
  }
  while (in.back().empty()) in.pop_back();
  onnx::Node& n = g_.node("MixtureOfExperts", "nbits.internal", p + "MixtureOfExperts", in);
  GraphBuilder::attr(n, "n_expert", X);
  GraphBuilder::attr(n, "k", hp_.n_expert_used);
  GraphBuilder::attr(n, "hidden_size", E);
  GraphBuilder::attr(n, "inter_size", F);
  GraphBuilder::attr(n, "normalize", int64_t{hp_.moe_normalize ? 1 : 0});
  if (hp_.moe_oai) {
    GraphBuilder::attr(n, "gating", std::string("softmax_after_topk"));
    GraphBuilder::attr(n, "activation", std::string("swiglu_oai"));
    GraphBuilder::attr(n, "activation_alpha", 1.702f);
    GraphBuilder::attr(n, "swiglu_limit", 7.0f);
  }
  GraphBuilder::attr(n, "accuracy_level", static_cast<int64_t>(level_));
  for (size_t i = 0; i < 3; ++i) {
    GraphBuilder::attr(n, std::string(names[i]) + "_bits", static_cast<int64_t>(w[i].bits));
    GraphBuilder::attr(n, std::string(names[i]) + "_block_size", static_cast<int64_t>(w[i].block));
  }
  std::string y = n.outputs[0];
  const TensorInfo* shared_up = f_.tensor(blk(l, "ffn_up_shexp.weight"));
  if (shared_up == nullptr) return y;
  const int64_t S = shared_up->ne[1];
  std::string s = swiglu(x, need(blk(l, "ffn_gate_shexp.weight"), {E, S}), need(shared_up->name, {E, S}),
                         need(blk(l, "ffn_down_shexp.weight"), {S, E}), p + "shared_expert/");
  if (const TensorInfo* gi = f_.tensor(blk(l, "ffn_gate_inp_shexp.weight"))) {
    const std::string gl = matmul(x, {&need(gi->name, {E})}, {}, p + "shared_expert_gate/MatMul");
    const std::string sg = g_.node("Sigmoid", "", p + "shared_expert_gate/Sigmoid", {gl}).outputs[0];
    s = g_.node("Mul", "", p + "shared_expert_gate/Mul", {s, sg}).outputs[0];
  }
  return g_.node("Add", "", p + "Add", {y, s}).outputs[0];
}

void Builder::lm_head(const std::string& x) {
  const std::string name = "/lm_head/MatMul";
  // With a final softcap or a logit scale the matmul writes an inner value, and c * tanh(y / c)
  // or y * (1 / logit_scale) (granite; ggml_scale by the fp32 reciprocal) writes "logits".
  const bool cap = hp_.final_softcap > 0, scale = hp_.logit_scale != 1.0;
  const bool post = cap || scale;
  const std::string out = post ? "/lm_head/output_0" : "logits";
  std::string y;
  if (hp_.tied_output && !embd_nbits_.B.empty()) {
    y = matmul_nbits_node(x, embd_nbits_, "", name, out);
  } else {
    const TensorInfo& w =
        need(hp_.tied_output ? "token_embd.weight" : "output.weight", {hp_.n_embd, hp_.n_vocab});
    if (maps_to_nbits(w.type)) {
      y = matmul_nbits_node(x, add_nbits(later(w), "lm_head", false), "", name, out);
    } else {
      y = matmul(x, {&w}, {}, name);
      if (!post) g_.node("Identity", "", "/lm_head/Identity", {y}).outputs[0] = "logits";
    }
  }
  if (scale) {
    const std::string r =
        g_.own_floats("/lm_head/logit_scale", {}, {1.0f / static_cast<float>(hp_.logit_scale)});
    onnx::Node& m = g_.node("Mul", "", "/lm_head/logit_scale/Mul", {y, r});
    if (!cap) m.outputs[0] = "logits";
    y = m.outputs[0];
  }
  if (!cap) return;
  const std::string c = g_.own_floats("/lm_head/softcap", {}, {static_cast<float>(hp_.final_softcap)});
  const std::string d = g_.node("Div", "", "/lm_head/softcap/Div", {y, c}).outputs[0];
  const std::string t = g_.node("Tanh", "", "/lm_head/softcap/Tanh", {d}).outputs[0];
  g_.node("Mul", "", "/lm_head/softcap/Mul", {t, c}).outputs[0] = "logits";
}

void Builder::build() {
  const int64_t H = hp_.head_dim, Nkv = hp_.n_head_kv;
  g_.input("input_ids", DataType::kInt64, {sym("batch_size"), sym("sequence_length")});
  g_.input("attention_mask", DataType::kInt64, {sym("batch_size"), sym("total_sequence_length")});
  for (int64_t l = 0; l < hp_.n_layer; ++l)
    for (const char* kv : {"key", "value"})
      g_.input("past_key_values." + std::to_string(l) + "." + kv, DataType::kFloat,
               {sym("batch_size"), fixed(Nkv), sym("past_sequence_length"), fixed(H)});
  g_.output("logits", DataType::kFloat, {sym("batch_size"), sym("sequence_length"), fixed(hp_.n_vocab)});
  for (int64_t l = 0; l < hp_.n_layer; ++l)
    for (const char* kv : {"key", "value"})
      g_.output("present." + std::to_string(l) + "." + kv, DataType::kFloat,
                {sym("batch_size"), fixed(Nkv), sym("total_sequence_length"), fixed(H)});

  mask_inputs();
  std::tie(cos_, sin_) = rope_caches("", hp_.rope_base, true);
  if (hp_.swa_window > 0 && hp_.swa_rope_scaled && hp_.rope_base_swa == hp_.rope_base)
    std::tie(cos_swa_, sin_swa_) = std::tie(cos_, sin_);
  else if (hp_.swa_window > 0)
    std::tie(cos_swa_, sin_swa_) = rope_caches("swa_", hp_.rope_base_swa, hp_.swa_rope_scaled);
  std::string residual = embedding();
  if (hp_.gemma) {  // the embedding scaled by sqrt(n_embd) in fp32, as llama.cpp does
    const float scale = std::sqrt(static_cast<float>(hp_.n_embd));
    const std::string c = g_.own_floats("/model/embed_tokens/scale", {}, {scale});
    residual = g_.node("Mul", "", "/model/embed_tokens/Mul", {residual, c}).outputs[0];
  }
  if (hp_.embedding_scale != 1.0)
    residual = scaled(residual, hp_.embedding_scale, "/model/embed_tokens/scale");
  // Each block: x = norm(residual) (olmo2: the residual itself), residual += post_norm(attention(x)),
  // then the same around the FFN; the norm of a sum is one SkipSimplifiedLayerNormalization.
  const int64_t E = hp_.n_embd;
  std::string x = hp_.pre_norms
                      ? rms_norm(residual, vec(need(blk(0, "attn_norm.weight"), {E})),
                                 "/model/layers.0/input_layernorm", norm_bias(blk(0, "attn_norm.weight")))
                      : residual;
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    const std::string p = "/model/layers." + std::to_string(l);
    std::string att = attention(l, x);
    if (hp_.residual_scale != 1.0) att = scaled(att, hp_.residual_scale, p + "/attn/residual_scale");
    if (hp_.post_norms)
      att = rms_norm(att, vec(need(blk(l, "post_attention_norm.weight"), {E})), p + "/post_attn_norm");
    std::string h, sum;
    if (hp_.pre_norms)
      std::tie(h, sum) =
          skip_norm(residual, att, vec(need(blk(l, hp_.ffn_norm.c_str()), {E})),
                    p + "/post_attention_layernorm", true, norm_bias(blk(l, hp_.ffn_norm.c_str())));
    else
      h = sum = g_.node("Add", "", p + "/attn/residual_add", {residual, att}).outputs[0];
    std::string down = mlp(l, h);
    if (hp_.residual_scale != 1.0) down = scaled(down, hp_.residual_scale, p + "/mlp/residual_scale");
    if (hp_.post_norms)
      down = rms_norm(down, vec(need(blk(l, "post_ffw_norm.weight"), {E})), p + "/post_ffw_norm");
    const bool last = l + 1 == hp_.n_layer;
    if (!last && !hp_.pre_norms) {
      x = residual = g_.node("Add", "", p + "/mlp/residual_add", {sum, down}).outputs[0];
      continue;
    }
    const std::string next_w = last ? hp_.output_norm : blk(l + 1, "attn_norm.weight");
    auto [nx, nsum] = skip_norm(sum, down, vec(need(next_w, {E})),
                                last ? "/model/layers." + std::to_string(l + 1) + "/final_norm_layernorm"
                                     : "/model/layers." + std::to_string(l + 1) + "/input_layernorm",
                                !last, norm_bias(next_w));
    x = nx;
    residual = nsum;
  }
  lm_head(x);
}

llm::GenaiConfig make_config(const File& f, const Hyperparams& hp) {
  llm::GenaiConfig c;
  c.path = f.label();
  const size_t slash = c.path.rfind('/');
  c.dir = slash == std::string::npos ? "." : c.path.substr(0, slash);
  c.filename = slash == std::string::npos ? c.path : c.path.substr(slash + 1);
  c.model_type = hp.arch;
  c.context_length = hp.context_length;
  c.vocab_size = hp.n_vocab;
  c.head_size = hp.head_dim;
  c.hidden_size = hp.n_embd;
  c.num_attention_heads = hp.n_head;
  c.num_key_value_heads = hp.n_head_kv;
  c.num_hidden_layers = hp.n_layer;
  if (const auto b = f.get_int("tokenizer.ggml.bos_token_id")) c.bos_token_id = *b;
  c.eos_token_ids = end_of_generation_ids(f);
  if (const auto p = f.get_int("tokenizer.ggml.padding_token_id")) c.pad_token_id = *p;
  c.search.do_sample = false;
  c.search.max_length = 0;
  c.search.past_present_share_buffer = true;
  return c;
}

}  // namespace

GgufModel build_model(File&& f, int accuracy_level, int64_t capacity) {
  GgufModel r;
  r.hp = read_hyperparams(f);
  const std::vector<std::string> bad = unsupported_tensors(f);
  if (!bad.empty()) {
    std::map<std::string, int> by_type;
    for (const std::string& b : bad) ++by_type[b.substr(b.rfind(": ") + 2)];
    std::string list, note;
    for (const auto& [t, n] : by_type)
      list += (list.empty() ? "" : ", ") + t + " (" + std::to_string(n) + ")";
    for (const TensorInfo& t : f.tensors())
      if (note.empty()) note = unmapped_note(t.type);
    f.fail("tensor types nbits cannot run: " + list + "; first: " + bad[0] + note);
  }
  r.config = make_config(f, r.hp);
  onnx::Model& m = r.model;
  m.ir_version = 10;
  m.producer_name = "nbits-gguf";
  m.opset_imports = {{"", 21}, {kMs, 1}};
  m.path = f.label();
  m.graph.name = r.hp.arch;
  auto file = std::make_shared<File>(std::move(f));
  Builder(file, r.hp, m, accuracy_level, capacity).build();
  // The weights that view the file stay valid as long as the model holds its storage; the
  // conversions made later keep the File (its mapping, its name for messages) alive.
  m.file = file->mapping;
  if (!file->owned.empty()) m.owned.push_back(std::move(file->owned));  // the buffer moves, not its bytes
  return r;
}

}  // namespace nbits::gguf
