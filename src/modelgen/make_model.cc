#include "modelgen/make_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/thread_pool.h"
#include "modelgen/weights.h"
#include "onnx/writer.h"

namespace nbits::modelgen {
namespace {

namespace fs = std::filesystem;
using onnx::DataType;
using onnx::Dim;
using onnx::float_attr;
using onnx::int_attr;

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> int64_bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> b(v.size() * 8);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Rotary caches like the builder: inv_freq = 1 / theta^(2i/H) in fp32, angle = t * inv_freq.
void add_rotary_caches(onnx::ModelWriter& w, const ModelShape& s) {
  const int64_t half = s.head_size / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(s.head_size);
    inv[static_cast<size_t>(i)] = 1.0f / std::pow(s.rope_theta, e);
  }
  std::vector<float> cos_c(static_cast<size_t>(s.context * half)), sin_c(cos_c.size());
  for (int64_t t = 0; t < s.context; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const float a = static_cast<float>(t) * inv[static_cast<size_t>(i)];
      cos_c[static_cast<size_t>(t * half + i)] = std::cos(a);
      sin_c[static_cast<size_t>(t * half + i)] = std::sin(a);
    }
  w.add_initializer("cos_cache", DataType::kFloat, {s.context, half}, float_bytes(cos_c));
  w.add_initializer("sin_cache", DataType::kFloat, {s.context, half}, float_bytes(sin_c));
}

class GraphBuilder {
 public:
  GraphBuilder(const MakeModelOptions& opt, ThreadPool& pool)
      : opt_(opt), s_(opt.shape), q_(opt.quant), pool_(pool), suffix_(q_.bits == 4 ? "_Q4" : "_Q8") {}

  MakeModelResult build() {
    w_.set_ir_version(10);
    w_.set_producer("onnxruntime-genai", "nbits make-model");
    w_.add_opset("", 21);
    w_.add_opset("com.microsoft", 1);
    add_io();
    add_constant("/model/constants/INT64/[1]", {1}, {1});
    add_constant("/model/constants/INT64/1", {}, {1});
    const auto [seqlens_k, total_len] = add_mask_subgraph();
    add_rotary_caches(w_, s_);

    // lm_head weight first: the shared embedding gathers from its codes.
    const auto lm_head = add_quantized_weight("lm_head.MatMul.weight", WeightKind::kLmHead, 0, s_.vocab,
                                              s_.hidden, opt_.embedding == EmbeddingMode::kShared);
    const std::string embed = add_embedding(lm_head);
    progress("embedding and lm_head");

    std::string x = "/model/layers.0/input_layernorm/output_0";
    w_.add_initializer("model.layers.0.input_layernorm.weight", DataType::kFloat, {s_.hidden},
                       float_bytes(weight_vector(opt_.seed, WeightKind::kInputNorm, 0, s_.hidden)));
    w_.add_node("SimplifiedLayerNormalization", "", "/model/layers.0/input_layernorm/LayerNorm",
                {embed, "model.layers.0.input_layernorm.weight"}, {x},
                {int_attr("axis", -1), float_attr("epsilon", s_.rms_eps), int_attr("stash_type", 1)});
    std::string residual = embed;
    for (int64_t i = 0; i < s_.layers; ++i) {
      add_layer(i, x, residual, seqlens_k, total_len);
      progress("layer " + std::to_string(i + 1) + "/" + std::to_string(s_.layers));
    }
    add_matmul("/lm_head/MatMul", lm_head, x, "logits", s_.hidden, s_.vocab);

    progress("writing " + opt_.out_dir + "/model.onnx(.data)");
    MakeModelResult r;
    r.onnx_path = opt_.out_dir + "/model.onnx";
    w_.save(r.onnx_path, /*external_data=*/true, /*threshold=*/0);
    r.data_bytes = static_cast<int64_t>(fs::file_size(r.onnx_path + ".data"));
    r.matmul_bytes = matmul_bytes_;
    return r;
  }

 private:
  struct WeightNames {
    std::string codes, scales, zero_points;  // zero_points empty when symmetric
  };

  void progress(const std::string& m) {
    if (opt_.progress) opt_.progress(m);
  }

  void add_io() {
    const Dim b{-1, "batch_size"}, seq{-1, "sequence_length"}, total{-1, "total_sequence_length"},
        past{-1, "past_sequence_length"};
    w_.add_input("input_ids", DataType::kInt64, {b, seq});
    w_.add_input("attention_mask", DataType::kInt64, {b, total});
    for (int64_t i = 0; i < s_.layers; ++i)
      for (const char* kv : {"key", "value"})
        w_.add_input("past_key_values." + std::to_string(i) + "." + kv, DataType::kFloat,
                     {b, Dim{s_.kv_heads, ""}, past, Dim{s_.head_size, ""}});
    w_.add_output("logits", DataType::kFloat, {b, seq, Dim{s_.vocab, ""}});
    for (int64_t i = 0; i < s_.layers; ++i)
      for (const char* kv : {"key", "value"})
        w_.add_output("present." + std::to_string(i) + "." + kv, DataType::kFloat,
                      {b, Dim{s_.kv_heads, ""}, total, Dim{s_.head_size, ""}});
  }

  void add_constant(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
    w_.add_node("Constant", "", name, {}, {name},
                {onnx::tensor_attr("value", DataType::kInt64, std::move(dims), int64_bytes(values))});
  }

  std::pair<std::string, std::string> add_mask_subgraph() {
    const std::string p = "/model/attn_mask_reformat/attn_mask_subgraph/";
    w_.add_node("ReduceSum", "", p + "ReduceSum", {"attention_mask", "/model/constants/INT64/[1]"},
                {p + "ReduceSum/output_0"}, {int_attr("keepdims", 0)});
    w_.add_node("Sub", "", p + "Sub", {p + "ReduceSum/output_0", "/model/constants/INT64/1"},
                {p + "Sub/output_0"});
    w_.add_node("Cast", "", p + "Sub/Cast", {p + "Sub/output_0"}, {p + "Sub/Cast/output_0"},
                {int_attr("to", static_cast<int64_t>(DataType::kInt32))});
    w_.add_node("Shape", "", p + "Shape", {"attention_mask"}, {p + "Shape/output_0"});
    w_.add_node("Gather", "", p + "Gather", {p + "Shape/output_0", "/model/constants/INT64/1"},
                {p + "Gather/output_0"}, {int_attr("axis", 0)});
    w_.add_node("Cast", "", p + "Gather/Cast", {p + "Gather/output_0"}, {p + "Gather/Cast/output_0"},
                {int_attr("to", static_cast<int64_t>(DataType::kInt32))});
    return {p + "Sub/Cast/output_0", p + "Gather/Cast/output_0"};
  }

  // Quantizes weight (kind, layer) and adds its initializers. two_d: scales as
  // [N, k_blocks] and zero points as [N, zp_row] (what GatherBlockQuantized needs).
  WeightNames add_quantized_weight(const std::string& base, WeightKind kind, int64_t layer, int64_t N,
                                   int64_t K, bool two_d = false) {
    QuantizedWeight qw = make_quantized(opt_.seed, kind, layer, N, K, q_, pool_);
    WeightNames n{base + suffix_, base + "_scales", ""};
    matmul_bytes_ += static_cast<int64_t>(qw.codes.size() + qw.scales.size() + qw.zero_points.size());
    const int64_t blob = q_.block * q_.bits / 8;
    w_.add_initializer(n.codes, DataType::kUint8, {N, qw.k_blocks, blob}, std::move(qw.codes));
    w_.add_initializer(n.scales, DataType::kFloat,
                       two_d ? std::vector<int64_t>{N, qw.k_blocks} : std::vector<int64_t>{N * qw.k_blocks},
                       std::move(qw.scales));
    if (q_.asym) {
      n.zero_points = base + "_zero_points";
      const int64_t zp_row = (qw.k_blocks * q_.bits + 7) / 8;
      w_.add_initializer(n.zero_points, DataType::kUint8,
                         two_d ? std::vector<int64_t>{N, zp_row} : std::vector<int64_t>{N * zp_row},
                         std::move(qw.zero_points));
    }
    return n;
  }

  void add_matmul(const std::string& node_base, const WeightNames& wn, const std::string& in,
                  const std::string& out, int64_t K, int64_t N) {
    std::vector<std::string> inputs = {in, wn.codes, wn.scales};
    if (!wn.zero_points.empty()) inputs.push_back(wn.zero_points);
    std::vector<onnx::WriterAttr> attrs = {int_attr("K", K), int_attr("N", N), int_attr("bits", q_.bits),
                                           int_attr("block_size", q_.block)};
    if (q_.accuracy_level != 0) attrs.push_back(int_attr("accuracy_level", q_.accuracy_level));
    w_.add_node("MatMulNBits", "com.microsoft", node_base + suffix_, inputs, {out}, std::move(attrs));
  }

  std::string quantized_matmul(const std::string& path, const std::string& init_base, WeightKind kind,
                               int64_t layer, const std::string& in, int64_t K, int64_t N) {
    const WeightNames wn = add_quantized_weight(init_base, kind, layer, N, K);
    const std::string out = path + "/MatMul/output_0";
    add_matmul(path + "/MatMul", wn, in, out, K, N);
    return out;
  }

  std::string add_embedding(const WeightNames& lm_head) {
    if (opt_.embedding == EmbeddingMode::kGather) {
      const WeightKind kind = s_.tied ? WeightKind::kLmHead : WeightKind::kEmbed;
      w_.add_initializer("model.embed_tokens.weight", DataType::kFloat, {s_.vocab, s_.hidden},
                         make_float_matrix(opt_.seed, kind, 0, s_.vocab, s_.hidden, pool_));
      w_.add_node("Gather", "", "/model/embed_tokens/Gather", {"model.embed_tokens.weight", "input_ids"},
                  {"/model/embed_tokens/Gather/output_0"}, {int_attr("axis", 0)});
      return "/model/embed_tokens/Gather/output_0";
    }
    const std::string shape_name = "/model/constants/INT64/[" + std::to_string(s_.vocab) + ", " +
                                   std::to_string(s_.hidden * q_.bits / 8) + "]";
    add_constant(shape_name, {2}, {s_.vocab, s_.hidden * q_.bits / 8});
    w_.add_node("Reshape", "", "/model/embed_tokens/Reshape", {lm_head.codes, shape_name},
                {"/model/embed_tokens/Reshape/output_0"});
    std::vector<std::string> in = {"/model/embed_tokens/Reshape/output_0", "input_ids", lm_head.scales};
    if (!lm_head.zero_points.empty()) in.push_back(lm_head.zero_points);
    w_.add_node("GatherBlockQuantized", "com.microsoft", "/model/embed_tokens/GatherBlockQuantized", in,
                {"/model/embed_tokens/GatherBlockQuantized/output_0"},
                {int_attr("bits", q_.bits), int_attr("block_size", q_.block), int_attr("gather_axis", 0),
                 int_attr("quantize_axis", 1)});
    return "/model/embed_tokens/GatherBlockQuantized/output_0";
  }

  // One decoder layer; x and residual are updated to the next layer's inputs.
  void add_layer(int64_t i, std::string& x, std::string& residual, const std::string& seqlens_k,
                 const std::string& total_len) {
    const std::string L = "/model/layers." + std::to_string(i);
    const std::string I = "model.layers." + std::to_string(i);
    std::string qkv = quantized_matmul(L + "/attn/qkv_proj", I + ".attn.qkv_proj.MatMul.weight",
                                       WeightKind::kQkv, i, x, s_.hidden, s_.qkv_out());
    if (s_.qkv_bias) {
      w_.add_initializer(I + ".attn.qkv_proj.Add.bias", DataType::kFloat, {s_.qkv_out()},
                         float_bytes(weight_vector(opt_.seed, WeightKind::kQkvBias, i, s_.qkv_out())));
      w_.add_node("Add", "", L + "/attn/qkv_proj/Add", {qkv, I + ".attn.qkv_proj.Add.bias"},
                  {L + "/attn/qkv_proj/Add/output_0"});
      qkv = L + "/attn/qkv_proj/Add/output_0";
    }
    const std::string attn = L + "/attn/GroupQueryAttention/output_0";
    const std::string si = std::to_string(i);
    w_.add_node(
        "GroupQueryAttention", "com.microsoft", L + "/attn/GroupQueryAttention",
        {qkv, "", "", "past_key_values." + si + ".key", "past_key_values." + si + ".value", seqlens_k,
         total_len, "cos_cache", "sin_cache"},
        {attn, "present." + si + ".key", "present." + si + ".value"},
        {int_attr("do_rotary", 1), int_attr("kv_num_heads", s_.kv_heads), int_attr("local_window_size", -1),
         int_attr("num_heads", s_.heads), int_attr("rotary_interleaved", 0),
         float_attr("scale", 1.0f / std::sqrt(static_cast<float>(s_.head_size))),
         float_attr("softcap", 0.0f)});
    const std::string o = quantized_matmul(L + "/attn/o_proj", I + ".attn.o_proj.MatMul.weight",
                                           WeightKind::kO, i, attn, s_.q_out(), s_.hidden);
    w_.add_initializer(I + ".post_attention_layernorm.weight", DataType::kFloat, {s_.hidden},
                       float_bytes(weight_vector(opt_.seed, WeightKind::kPostNorm, i, s_.hidden)));
    const std::string x2 = L + "/post_attention_layernorm/output_0",
                      r2 = L + "/post_attention_layernorm/output_3";
    w_.add_node("SkipSimplifiedLayerNormalization", "com.microsoft",
                L + "/post_attention_layernorm/SkipLayerNorm",
                {residual, o, I + ".post_attention_layernorm.weight"}, {x2, "", "", r2},
                {float_attr("epsilon", s_.rms_eps)});
    const std::string g = quantized_matmul(L + "/mlp/gate_proj", I + ".mlp.gate_proj.MatMul.weight",
                                           WeightKind::kGate, i, x2, s_.hidden, s_.intermediate);
    const std::string u = quantized_matmul(L + "/mlp/up_proj", I + ".mlp.up_proj.MatMul.weight",
                                           WeightKind::kUp, i, x2, s_.hidden, s_.intermediate);
    w_.add_node("Sigmoid", "", L + "/mlp/act_fn/Sigmoid", {g}, {L + "/mlp/act_fn/Sigmoid/output_0"});
    w_.add_node("Mul", "", L + "/mlp/act_fn/Mul", {g, L + "/mlp/act_fn/Sigmoid/output_0"},
                {L + "/mlp/act_fn/Mul/output_0"});
    w_.add_node("Mul", "", L + "/mlp/Mul", {L + "/mlp/act_fn/Mul/output_0", u}, {L + "/mlp/Mul/output_0"});
    const std::string d =
        quantized_matmul(L + "/mlp/down_proj", I + ".mlp.down_proj.MatMul.weight", WeightKind::kDown, i,
                         L + "/mlp/Mul/output_0", s_.intermediate, s_.hidden);
    const bool last = i + 1 == s_.layers;
    const std::string next = std::to_string(i + 1);
    const std::string NL = "/model/layers." + next + (last ? "/final_norm_layernorm" : "/input_layernorm");
    const std::string NI =
        "model.layers." + next + (last ? ".final_norm_layernorm" : ".input_layernorm") + ".weight";
    w_.add_initializer(NI, DataType::kFloat, {s_.hidden},
                       float_bytes(weight_vector(opt_.seed, WeightKind::kInputNorm, i + 1, s_.hidden)));
    x = NL + "/output_0";
    if (last) {
      w_.add_node("SkipSimplifiedLayerNormalization", "com.microsoft", NL + "/SkipLayerNorm", {r2, d, NI},
                  {x}, {float_attr("epsilon", s_.rms_eps)});
    } else {
      residual = NL + "/output_3";
      w_.add_node("SkipSimplifiedLayerNormalization", "com.microsoft", NL + "/SkipLayerNorm", {r2, d, NI},
                  {x, "", "", residual}, {float_attr("epsilon", s_.rms_eps)});
    }
  }

  const MakeModelOptions& opt_;
  const ModelShape& s_;
  const QuantSpec& q_;
  ThreadPool& pool_;
  const std::string suffix_;
  onnx::ModelWriter w_;
  int64_t matmul_bytes_ = 0;
};

void copy_tokenizer(const std::string& from, const std::string& to) {
  NBITS_CHECK(fs::is_directory(from), "--tokenizer-from: '", from, "' is not a directory");
  int copied = 0;
  for (const auto& e : fs::directory_iterator(from)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name == "genai_config.json" || name.rfind("model.onnx", 0) == 0) continue;
    std::error_code ec;
    fs::copy_file(e.path(), fs::path(to) / name, fs::copy_options::overwrite_existing, ec);
    NBITS_CHECK(!ec, "cannot copy '", e.path().string(), "' to '", to, "': ", ec.message());
    fs::permissions(fs::path(to) / name, fs::perms::owner_write, fs::perm_options::add, ec);
    ++copied;
  }
  NBITS_CHECK(copied > 0, "--tokenizer-from: '", from, "' holds no files");
}

}  // namespace

std::string genai_config_json(const ModelShape& s) {
  nlohmann::ordered_json decoder = {
      {"session_options", {{"log_id", "onnxruntime-genai"}, {"provider_options", nlohmann::json::array()}}},
      {"filename", "model.onnx"},
      {"head_size", s.head_size},
      {"hidden_size", s.hidden},
      {"inputs",
       {{"input_ids", "input_ids"},
        {"attention_mask", "attention_mask"},
        {"past_key_names", "past_key_values.%d.key"},
        {"past_value_names", "past_key_values.%d.value"}}},
      {"outputs",
       {{"logits", "logits"},
        {"present_key_names", "present.%d.key"},
        {"present_value_names", "present.%d.value"}}},
      {"num_attention_heads", s.heads},
      {"num_hidden_layers", s.layers},
      {"num_key_value_heads", s.kv_heads}};
  nlohmann::ordered_json model = {
      {"bos_token_id", s.bos_token_id}, {"context_length", s.context},    {"decoder", decoder},
      {"eos_token_id", s.eos_token_id}, {"pad_token_id", s.eos_token_id}, {"type", s.type},
      {"vocab_size", s.vocab}};
  nlohmann::ordered_json search = {{"diversity_penalty", 0.0},
                                   {"do_sample", false},
                                   {"early_stopping", true},
                                   {"length_penalty", 1.0},
                                   {"max_length", s.context},
                                   {"min_length", 0},
                                   {"no_repeat_ngram_size", 0},
                                   {"num_beams", 1},
                                   {"num_return_sequences", 1},
                                   {"past_present_share_buffer", true},
                                   {"repetition_penalty", 1.0},
                                   {"temperature", 1.0},
                                   {"top_k", 50},
                                   {"top_p", 1.0}};
  nlohmann::ordered_json root = {{"model", model}, {"search", search}};
  return root.dump(4) + "\n";
}

MakeModelResult make_model(const MakeModelOptions& opt) {
  opt.shape.validate();
  const QuantSpec& q = opt.quant;
  NBITS_CHECK(q.bits == 4 || q.bits == 8, "make-model: --bits must be 4 or 8 (got ", q.bits, ")");
  NBITS_CHECK(q.block >= 16 && (q.block & (q.block - 1)) == 0, "make-model: --block ", q.block,
              " must be a power of two >= 16");
  NBITS_CHECK(q.accuracy_level >= 0 && q.accuracy_level <= 4, "make-model: --accuracy-level must be 0..4");
  if (opt.embedding == EmbeddingMode::kShared) {
    NBITS_CHECK(opt.shape.tied, "make-model: --embedding shared needs tied embeddings (--tied)");
    NBITS_CHECK(opt.shape.hidden % q.block == 0, "make-model: --embedding shared needs hidden (",
                opt.shape.hidden, ") to be a multiple of the block size (", q.block, ")");
  }
  NBITS_CHECK(!opt.out_dir.empty(), "make-model: no output directory (-o DIR)");
  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  NBITS_CHECK(!ec && fs::is_directory(opt.out_dir), "make-model: cannot create directory '", opt.out_dir,
              "'");
  ThreadPool pool(opt.threads);
  MakeModelResult r = GraphBuilder(opt, pool).build();
  {
    std::ofstream f(opt.out_dir + "/genai_config.json");
    f << genai_config_json(opt.shape);
    NBITS_CHECK(f.good(), "make-model: cannot write '", opt.out_dir, "/genai_config.json'");
  }
  if (!opt.tokenizer_from.empty()) copy_tokenizer(opt.tokenizer_from, opt.out_dir);
  return r;
}

}  // namespace nbits::modelgen
