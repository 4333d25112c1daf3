// `nbits inspect FILE_OR_DIR`: graph I/O, op histogram, MatMulNBits table with
// the kernel path each node takes, and warnings about slow or wasteful layouts.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/common.h"
#include "cli/kernel_report.h"
#include "gguf/model_builder.h"
#include "gguf/quant_map.h"
#include "gguf/reader.h"
#include "graph/op.h"
#include "graph/session.h"
#include "llm/genai_config.h"
#include "llm/hf_config.h"
#include "onnx/model.h"

namespace nbits::cli {
namespace {

using nlohmann::json;

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string model_file(const std::string& arg) {
  if (!is_dir(arg)) {
    NBITS_CHECK(file_exists(arg), "'", arg, "' does not exist");
    return arg;
  }
  if (file_exists(arg + "/genai_config.json") || file_exists(arg + "/config.json"))
    return llm::load_model_config(arg).model_path();
  NBITS_CHECK(file_exists(arg + "/model.onnx"), "no model.onnx, genai_config.json or config.json in ", arg);
  return arg + "/model.onnx";
}

std::string dims_str(const onnx::ValueInfo& v) {
  if (!v.has_shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < v.dims.size(); ++i) {
    if (i > 0) s += ",";
    s += v.dims[i].value >= 0 ? std::to_string(v.dims[i].value)
                              : (v.dims[i].param.empty() ? "?" : v.dims[i].param);
  }
  return s + "]";
}

std::string mb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

struct NBitsRow {
  std::string node;
  int64_t K = -1, N = -1;
  int64_t bits = 4, block_size = -1, accuracy_level = 0;
  bool zero_points = false;
  std::string kernel;
  std::string prefill_kernel;  // empty until a session loads
  int64_t packed_bytes = 0;    // as the session holds it (0 until a session loads)
};

// load() makes the model (an ONNX file read, or a GGUF file synthesised): once to
// inspect, once more for the session.
json inspect_model(const std::string& path, const std::function<onnx::Model()>& load,
                   const std::optional<int>& accuracy_override, bool try_session, bool fp16_scales,
                   int threads) {
  const onnx::Model model = load();
  const onnx::Graph& g = model.graph;
  json r;
  r["model"] = path;
  r["producer"] = model.producer_name + (model.producer_version.empty() ? "" : " " + model.producer_version);
  r["opsets"] = json::object();
  for (const auto& o : model.opset_imports) r["opsets"][o.domain.empty() ? "ai.onnx" : o.domain] = o.version;
  for (const char* kind : {"inputs", "outputs"}) {
    json list = json::array();
    for (const auto& v : kind[0] == 'i' ? g.inputs : g.outputs)
      list.push_back({{"name", v.name}, {"dtype", onnx::data_type_name(v.elem_type)}, {"dims", dims_str(v)}});
    r[kind] = list;
  }
  std::map<std::string, int64_t> hist;
  std::set<std::string> consumed, produced;
  for (const auto& n : g.nodes) {
    const bool std_domain = n.domain.empty() || n.domain == "ai.onnx";
    hist[std_domain ? n.op_type : n.domain + ":" + n.op_type]++;
    for (const auto& in : n.inputs)
      if (!in.empty()) consumed.insert(in);
    for (const auto& out : n.outputs)
      if (!out.empty()) produced.insert(out);
  }
  for (const auto& o : g.outputs) consumed.insert(o.name);
  r["ops"] = hist;
  r["nodes"] = g.nodes.size();

  // Every op type the runtime has no implementation for (all of them, not the first).
  json cannot = json::array();
  std::map<std::string, std::pair<int64_t, std::string>> missing;  // "domain:op" -> (count, first node)
  for (const auto& n : g.nodes)
    if (graph::find_op(n.domain, n.op_type) == nullptr) {
      auto& m = missing[(n.domain.empty() ? "ai.onnx" : n.domain) + ":" + n.op_type];
      if (m.first++ == 0) m.second = n.name;
    }
  for (const auto& [op, m] : missing)
    cannot.push_back({{"op", op}, {"nodes", m.first}, {"first_node", m.second}});
  r["cannot_run"] = cannot;

  // The layout: which attention the export uses, the float dtype at the boundary, position ids.
  std::string attention = "none";
  for (const auto& n : g.nodes)
    if (n.op_type == "GroupQueryAttention" || n.op_type == "MultiHeadAttention" || n.op_type == "Attention")
      attention = n.op_type;
  std::string io_float = "float";
  for (const auto& v : g.outputs)
    if (v.elem_type == onnx::DataType::kFloat16 || v.elem_type == onnx::DataType::kBfloat16)
      io_float = onnx::data_type_name(v.elem_type);
  bool position_ids = false;
  for (const auto& v : g.inputs) position_ids = position_ids || v.name == "position_ids";
  r["layout"] = {{"attention", attention},
                 {"kv_cache", attention == "GroupQueryAttention" ? "one buffer (past == present)"
                                                                 : "present = Concat(past, new)"},
                 {"io_dtype", io_float},
                 {"position_ids", position_ids}};

  json warnings = json::array();
  // MatMulNBits table, from the attributes.
  std::vector<NBitsRow> rows;
  std::map<int64_t, int64_t> levels;
  for (const auto& n : g.nodes) {
    if (n.op_type != "MatMulNBits") continue;
    NBitsRow row;
    row.node = n.name;
    for (const char* a : {"K", "N", "block_size"})
      if (n.attr(a) == nullptr)
        warnings.push_back("node '" + n.name + "' (MatMulNBits): missing required attribute '" + a + "'");
    row.K = n.attr_int("K", -1);
    row.N = n.attr_int("N", -1);
    row.bits = n.attr_int("bits", 4);
    row.block_size = n.attr_int("block_size", -1);
    row.accuracy_level = n.attr_int("accuracy_level", 0);
    row.zero_points = n.has_input(3);
    row.kernel = (accuracy_override.value_or(static_cast<int>(row.accuracy_level)) == 4) ? "int8 activations"
                                                                                         : "fp32 dequantize";
    levels[row.accuracy_level]++;
    rows.push_back(row);
  }
  // Kernel paths, from a session when the model loads: the plan after the load-time
  // fusions, per op type with the kernel each node takes.
  if (try_session) {
    try {
      graph::SessionOptions so;
      so.accuracy_level = accuracy_override;
      so.fp16_scales = fp16_scales;
      so.threads = threads;  // the packed formats depend on it (kernels::PackOptions::auto_format)
      auto session = graph::Session::load(load(), so);
      std::map<std::string, graph::MatMulNBitsInfo> infos;
      for (const auto& i : session->matmul_nbits_info()) infos[i.node] = i;
      for (auto& row : rows)
        if (auto it = infos.find(row.node); it != infos.end()) {
          row.kernel = it->second.kernel;
          row.prefill_kernel = it->second.prefill_kernel;
          row.packed_bytes = static_cast<int64_t>(it->second.packed_bytes);
          infos.erase(it);
        }
      // Packed weights of other ops (a MixtureOfExperts node's experts, one row per projection).
      for (const auto& [node, i] : infos) {
        NBitsRow row;
        row.node = node;
        row.K = i.K, row.N = i.N, row.bits = i.bits, row.block_size = i.block_size;
        row.accuracy_level = i.accuracy_level;
        row.zero_points = i.zero_points;
        row.kernel = i.kernel;
        row.prefill_kernel = i.prefill_kernel;
        row.packed_bytes = static_cast<int64_t>(i.packed_bytes);
        rows.push_back(row);
      }
      std::map<std::pair<std::string, std::string>, int64_t> plan;  // (op type, kernel) -> nodes
      const auto entries = session->profile();
      for (const auto& e : entries) plan[{e.op_type, e.kernel.empty() ? "-" : e.kernel}]++;
      json plan_rows = json::array();
      for (const auto& [k, n] : plan)
        plan_rows.push_back({{"op", k.first}, {"kernel", k.second}, {"nodes", n}});
      std::string cache = "none", kv_dtype = "none";
      bool q8 = false;  // --kv-cache q8 applies: GroupQueryAttention (ShortConv) owns the cache
      for (const auto& o : g.outputs)
        if (o.name.rfind("present", 0) == 0) {
          q8 = graph::updates_cache_in_place(session->output_producer(o.name));
          cache = q8 ? "one buffer updated in place (" + session->output_producer(o.name) + ")"
                     : "copied every step (present = " + session->output_producer(o.name) + ")";
          kv_dtype = graph::dtype_name(session->output_dtype(o.name));
          break;
        }
      r["session"] = {{"loads", true},           {"weight_bytes", session->weight_bytes()},
                      {"nodes", entries.size()}, {"kv_cache", cache},
                      {"kv_dtype", kv_dtype},    {"kv_cache_q8", q8},
                      {"plan", plan_rows},       {"kernel_choice", kernel_choice_json()}};
    } catch (const Error& e) {
      r["session"] = {{"loads", false}, {"error", e.what()}};
      warnings.push_back(std::string("the runtime cannot load this model: ") + e.what());
    }
  }
  json table = json::array();
  for (const auto& row : rows)
    table.push_back({{"node", row.node},
                     {"K", row.K},
                     {"N", row.N},
                     {"bits", row.bits},
                     {"block_size", row.block_size},
                     {"accuracy_level", row.accuracy_level},
                     {"zero_points", row.zero_points},
                     {"kernel", row.kernel},
                     {"prefill_kernel", row.prefill_kernel},
                     {"packed_bits_per_weight",
                      row.packed_bytes > 0 && row.K > 0 && row.N > 0
                          ? 8.0 * static_cast<double>(row.packed_bytes) / static_cast<double>(row.K * row.N)
                          : 0.0}});
  r["matmul_nbits"] = table;

  for (const auto& [level, count] : levels)
    if (level != 4 && !(accuracy_override && *accuracy_override == 4))
      warnings.push_back(std::to_string(count) + " MatMulNBits node(s) have accuracy_level " +
                         std::to_string(level) +
                         ": will dequantize to fp32: several times slower decode; run `nbits patch IN OUT "
                         "--accuracy-level 4` (or pass --accuracy-level 4)");
  // fp32 embedding table beside a quantized lm_head.
  for (const auto& n : g.nodes) {
    if (n.op_type != "Gather" || !n.has_input(0)) continue;
    const onnx::Tensor* t = g.initializer(n.inputs[0]);
    if (t == nullptr || t->dtype != onnx::DataType::kFloat || t->dims.size() != 2) continue;
    for (const auto& row : rows)
      if (row.N == t->dims[0] && row.K == t->dims[1])
        warnings.push_back("embedding '" + t->name + "' is fp32 (" +
                           mb(static_cast<double>(onnx::tensor_bytes(t->dtype, t->numel()))) +
                           ") while lm_head '" + row.node +
                           "' is quantized: the shared layout (GatherBlockQuantized on the lm_head's codes) "
                           "would drop it");
  }
  // Float MatMul weights left in a quantized file (the tied lm_head of onnx-community q4 exports:
  // MatMul(x, Transpose(embedding))): streamed in full every decode step.
  if (!rows.empty()) {
    std::map<std::string, const onnx::Node*> producer;
    for (const auto& n : g.nodes)
      for (const auto& o : n.outputs) producer[o] = &n;
    auto float_weight = [&](const std::string& name) -> const onnx::Tensor* {
      const onnx::Tensor* t = g.initializer(name);
      if (t == nullptr) {
        const auto it = producer.find(name);
        if (it != producer.end() && it->second->op_type == "Transpose" && it->second->has_input(0))
          t = g.initializer(it->second->inputs[0]);
      }
      const bool is_float =
          t != nullptr && (t->dtype == onnx::DataType::kFloat || t->dtype == onnx::DataType::kFloat16 ||
                           t->dtype == onnx::DataType::kBfloat16);
      return is_float && t->dims.size() == 2 ? t : nullptr;
    };
    size_t float_bytes = 0, quant_bytes = 0, count = 0;
    std::string first;
    for (const auto& n : g.nodes) {
      if (n.op_type == "MatMulNBits" && n.has_input(1))
        if (const onnx::Tensor* t = g.initializer(n.inputs[1]))
          quant_bytes += onnx::tensor_bytes(t->dtype, t->numel());
      if (n.op_type != "MatMul" || !n.has_input(1)) continue;
      if (const onnx::Tensor* t = float_weight(n.inputs[1])) {
        float_bytes += onnx::tensor_bytes(t->dtype, t->numel());
        if (count++ == 0) first = n.name;
      }
    }
    if (float_bytes > 0 && float_bytes * 4 > quant_bytes)
      warnings.push_back(std::to_string(count) + " MatMul weight(s) stay float in this quantized file (" +
                         mb(static_cast<double>(float_bytes)) + " streamed per token against " +
                         mb(static_cast<double>(quant_bytes)) + " of quantized codes), e.g. '" + first +
                         "': pass --requantize-float q8 (or q4) to re-quantize them at load");
  }
  std::vector<std::string> unused;
  size_t unused_bytes = 0;
  for (const auto& t : g.initializers)
    if (!consumed.count(t.name)) {
      unused.push_back(t.name);
      unused_bytes += onnx::tensor_bytes(t.dtype, t.numel());
    }
  if (!unused.empty())
    warnings.push_back(std::to_string(unused.size()) + " unused initializer(s) (" +
                       mb(static_cast<double>(unused_bytes)) + "), e.g. '" + unused[0] + "'");
  std::set<std::string> inits;
  for (const auto& t : g.initializers) inits.insert(t.name);
  for (const auto& in : g.inputs)
    if (!consumed.count(in.name) && !inits.count(in.name))
      warnings.push_back("graph input '" + in.name + "' is not used by any node");
  std::set<std::string> available(inits);
  for (const auto& in : g.inputs) available.insert(in.name);
  for (const auto& n : g.nodes)
    for (const auto& in : n.inputs)
      if (!in.empty() && !available.count(in) && !produced.count(in))
        warnings.push_back("node '" + n.name + "' (" + n.op_type + ") reads '" + in +
                           "', which no node, input or initializer provides");
  for (const auto& o : g.outputs)
    if (!produced.count(o.name) && !available.count(o.name))
      warnings.push_back("graph output '" + o.name + "' is not produced by any node");
  r["warnings"] = warnings;
  return r;
}

std::string str(const json& j) { return printable(j.get<std::string>()); }

// A GGUF file: architecture, hyperparameters, tensor types, and every tensor nbits cannot run.
json gguf_summary(const gguf::File& f) {
  json r;
  r["version"] = f.version();
  r["tensors"] = f.tensors().size();
  std::map<std::string, int64_t> types;
  json storage = json::object();
  for (const auto& t : f.tensors()) {
    types[gguf::type_name(t.type)]++;
    if (gguf::maps_to_nbits(t.type))
      storage[gguf::type_name(t.type)] = {{"file_bits_per_weight", gguf::file_bits_per_weight(t.type)},
                                          {"nbits_bits_per_weight", gguf::mapped_bits_per_weight(t.type)}};
  }
  r["tensor_types"] = types;
  // How each quantized type is held: the file's bits per weight and MatMulNBits' (codes,
  // fp32 scales and mins) when it is widened without loss to 4- or 8-bit codes.
  r["storage"] = storage;
  r["unsupported"] = gguf::unsupported_tensors(f);
  // Parameters, and those a token uses: of the 3-D expert tensors of a mixture-of-experts file,
  // expert_used_count / expert_count.
  {
    double total = 0, experts = 0;
    for (const auto& t : f.tensors()) {
      total += static_cast<double>(t.numel());
      if (t.n_dims == 3) experts += static_cast<double>(t.numel());
    }
    double used = 1.0;
    if (const auto arch = f.get_string("general.architecture")) {
      const int64_t n = f.get_int(*arch + ".expert_count").value_or(0);
      const int64_t k = f.get_int(*arch + ".expert_used_count").value_or(0);
      if (n > 0 && k > 0 && k <= n) used = static_cast<double>(k) / static_cast<double>(n);
    }
    r["parameters"] = {{"total", total},
                       {"active", total - experts * (1.0 - used)},
                       {"file_bytes_per_token", gguf::file_bytes_per_token(f)}};
  }
  r["tokenizer"] = {{"model", f.get_string("tokenizer.ggml.model").value_or("")},
                    {"pre", f.get_string("tokenizer.ggml.pre").value_or("")}};
  try {
    const gguf::Hyperparams hp = gguf::read_hyperparams(f);
    r["arch"] = hp.arch;
    r["hyperparameters"] = {{"layers", hp.n_layer},
                            {"hidden", hp.n_embd},
                            {"heads", hp.n_head},
                            {"kv_heads", hp.n_head_kv},
                            {"head_dim", hp.head_dim},
                            {"ffn", hp.n_ff},
                            {"vocab", hp.n_vocab},
                            {"context_length", hp.context_length},
                            {"rope_base", hp.rope_base},
                            {"rope_dim", hp.rope_dim},
                            {"rope", hp.rope_interleaved ? "adjacent pairs (ggml normal)" : "halves (NEOX)"},
                            {"rms_eps", hp.rms_eps},
                            {"tied_output", hp.tied_output}};
    if (!hp.conv_layer.empty()) {  // lfm2: which layers are short convolutions
      json conv = json::array();
      for (size_t l = 0; l < hp.conv_layer.size(); ++l)
        if (hp.conv_layer[l]) conv.push_back(l);
      r["hyperparameters"]["conv_layers"] = conv;
      r["hyperparameters"]["conv_taps"] = hp.conv_taps;
    }
    if (hp.nope_period > 0) r["hyperparameters"]["no_rope_every"] = hp.nope_period;     // smollm3
    if (!hp.pre_norms) r["hyperparameters"]["norms"] = "after attention and FFN only";  // olmo2
    if (hp.layer_norm) r["hyperparameters"]["norms"] = "LayerNorm with biases";         // stablelm
    if (hp.swa_window > 0) {  // gemma2 / gemma3 / olmo2: layer l local when l % period < period - 1
      r["hyperparameters"]["sliding_window"] = hp.swa_window;
      r["hyperparameters"]["sliding_window_period"] = hp.swa_period;
      if (hp.rope_base_swa != hp.rope_base) r["hyperparameters"]["rope_base_local"] = hp.rope_base_swa;
    }
    json scaling;
    if (hp.yarn)
      scaling = {{"type", "yarn"},
                 {"factor", hp.rope_linear_factor},
                 {"original_context", hp.rope_orig_context},
                 {"beta_fast", hp.yarn_beta_fast},
                 {"beta_slow", hp.yarn_beta_slow},
                 {"magnitude", hp.yarn_mscale}};
    else if (hp.rope_linear_factor != 1.0)
      scaling = {{"type", "linear"}, {"factor", hp.rope_linear_factor}};
    if (hp.rope_freqs) scaling["frequency_factors"] = "rope_freqs.weight (Llama 3)";
    if (hp.rope_factors) scaling["frequency_factors"] = "rope_factors_long / short (LongRoPE)";
    if (!scaling.is_null()) r["hyperparameters"]["rope_scaling"] = scaling;
    if (hp.attn_temp_scale != 0)  // mistral3
      r["hyperparameters"]["attention_temperature"] = {{"scale", hp.attn_temp_scale},
                                                       {"floor", hp.attn_temp_floor}};
    if (hp.n_expert > 0) {
      r["hyperparameters"]["experts"] = hp.n_expert;
      r["hyperparameters"]["experts_used"] = hp.n_expert_used;
      r["hyperparameters"]["experts_renormalised"] = hp.moe_normalize;
    }
  } catch (const Error& e) {
    r["arch"] = f.get_string("general.architecture").value_or("");
    r["error"] = e.what();
  }
  return r;
}

void print_gguf(const json& g) {
  std::printf("GGUF v%lld: arch %s, %lld tensors (", g["version"].get<long long>(), str(g["arch"]).c_str(),
              g["tensors"].get<long long>());
  bool first = true;
  for (const auto& [t, n] : g["tensor_types"].items()) {
    std::printf("%s%s %lld", first ? "" : ", ", t.c_str(), n.get<long long>());
    first = false;
  }
  std::printf("); tokenizer %s/%s\n", str(g["tokenizer"]["model"]).c_str(),
              str(g["tokenizer"]["pre"]).c_str());
  if (g.contains("hyperparameters")) {
    std::printf("  ");
    for (const auto& [k, v] : g["hyperparameters"].items())
      std::printf("%s=%s ", k.c_str(), v.dump().c_str());
    std::printf("\n");
  }
  if (g.contains("parameters")) {
    const json& p = g["parameters"];
    const double total = p["total"], active = p["active"];
    std::printf("  parameters: %.3g B", total / 1e9);
    if (active < total) std::printf(" (%.3g B active per token: the chosen experts)", active / 1e9);
    std::printf("; the file's matrices read per token: %.1f MB\n",
                static_cast<double>(p["file_bytes_per_token"].get<int64_t>()) / 1e6);
  }
  for (const auto& [t, b] : g["storage"].items()) {
    const double file = b["file_bits_per_weight"], held = b["nbits_bits_per_weight"];
    std::printf(
        "  %s: %.2f bits per weight in the file, %.2f converted for packing (%+.0f%%; packed: bits/w "
        "below)\n",
        t.c_str(), file, held, 100.0 * (held / file - 1.0));
  }
  if (g.contains("error")) std::printf("  cannot run: %s\n", str(g["error"]).c_str());
  if (!g["unsupported"].empty()) {
    std::printf("  %zu tensor(s) of types nbits cannot run:\n", g["unsupported"].size());
    for (const auto& u : g["unsupported"]) std::printf("    %s\n", str(u).c_str());
  }
}

void print_text(const json& r) {
  if (r.contains("gguf")) print_gguf(r["gguf"]);
  std::printf("model: %s\nproducer: %s\nopsets:", str(r["model"]).c_str(), str(r["producer"]).c_str());
  for (const auto& [d, v] : r["opsets"].items()) std::printf(" %s=%lld", d.c_str(), v.get<long long>());
  std::printf("\n");
  for (const char* kind : {"inputs", "outputs"}) {
    std::printf("\n%s:\n", kind);
    for (const auto& v : r[kind])
      std::printf("  %-32s %-8s %s\n", str(v["name"]).c_str(), str(v["dtype"]).c_str(),
                  str(v["dims"]).c_str());
  }
  std::printf("\nops (%lld nodes):\n", r["nodes"].get<long long>());
  std::vector<std::pair<int64_t, std::string>> ops;
  for (const auto& [op, c] : r["ops"].items()) ops.emplace_back(c.get<int64_t>(), op);
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [c, op] : ops)
    std::printf("  %-40s %lld\n", printable(op).c_str(), static_cast<long long>(c));
  const json& l = r["layout"];
  std::printf("\nlayout: attention %s; KV cache %s; float I/O %s; position_ids %s\n",
              str(l["attention"]).c_str(), str(l["kv_cache"]).c_str(), str(l["io_dtype"]).c_str(),
              l["position_ids"].get<bool>() ? "yes" : "no");
  const json& cannot = r["cannot_run"];
  if (cannot.empty()) {
    std::printf("every op has an implementation\n");
  } else {
    std::printf("\ncannot run (%zu op types):\n", cannot.size());
    for (const auto& c : cannot)
      std::printf("  %-40s %lld node(s), first '%s'\n", str(c["op"]).c_str(), c["nodes"].get<long long>(),
                  str(c["first_node"]).c_str());
  }
  const json& t = r["matmul_nbits"];
  if (!t.empty()) {
    int width = 44;  // the node column: the longest name
    for (const auto& row : t) width = std::max(width, static_cast<int>(str(row["node"]).size()));
    std::printf(
        "\nMatMulNBits (%zu; bits/w: as packed, scales and headers included):\n  %-*s %6s %6s %4s %5s "
        "%4s %3s %6s  %-28s %s\n",
        t.size(), width, "node", "K", "N", "bits", "block", "acc", "zp", "bits/w", "kernel (decode)",
        "prefill");
    for (const auto& row : t) {
      const double bpw = row["packed_bits_per_weight"].get<double>();
      char packed[16] = "-";
      if (bpw > 0) std::snprintf(packed, sizeof packed, "%.2f", bpw);
      std::printf(
          "  %-*s %6lld %6lld %4lld %5lld %4lld %3s %6s  %-28s %s\n", width, str(row["node"]).c_str(),
          row["K"].get<long long>(), row["N"].get<long long>(), row["bits"].get<long long>(),
          row["block_size"].get<long long>(), row["accuracy_level"].get<long long>(),
          row["zero_points"].get<bool>() ? "y" : "n", packed, str(row["kernel"]).c_str(),
          row["prefill_kernel"].get<std::string>().empty() ? "-" : str(row["prefill_kernel"]).c_str());
    }
  }
  if (r.contains("session") && r["session"]["loads"].get<bool>()) {
    const json& s = r["session"];
    std::printf(
        "\nsession: loads; %.1f MB of weights in use; %lld nodes after load-time fusion; KV cache %s, %s "
        "(--kv-cache q8: %s)\n",
        s["weight_bytes"].get<double>() / 1e6, s["nodes"].get<long long>(), str(s["kv_cache"]).c_str(),
        str(s["kv_dtype"]).c_str(), s["kv_cache_q8"].get<bool>() ? "applies" : "refused");
    if (!s["kernel_choice"].empty()) {
      std::printf("  kernel choice (per role and packed format):\n");
      for (const auto& c : s["kernel_choice"]) {
        std::printf("    %s: %s (%s", str(c["key"]).c_str(), str(c["chosen"]).c_str(), str(c["why"]).c_str());
        const char* sep = ": ";
        for (const auto& k : c["candidates"])
          if (k.contains("us")) {
            std::printf("%s%s %.1f us", sep, str(k["name"]).c_str(), k["us"].get<double>());
            sep = ", ";
          }
        std::printf(")\n");
      }
    }
    std::printf("  %-40s %6s  %s\n", "op", "nodes", "kernel (- : one path)");
    for (const auto& row : s["plan"])
      std::printf("  %-40s %6lld  %s\n", str(row["op"]).c_str(), row["nodes"].get<long long>(),
                  str(row["kernel"]).c_str());
  }
  const json& w = r["warnings"];
  std::printf("\nwarnings (%zu):\n", w.size());
  for (const auto& s : w) std::printf("  - %s\n", str(s).c_str());
}

int inspect_main(const std::vector<std::string>& args) {
  Flags f("inspect", "FILE_OR_DIR [options]",
          "Shows a model's inputs/outputs, op histogram, the MatMulNBits nodes with the kernel\n"
          "path each will take, and warnings (slow accuracy levels, wasteful layouts, unused or\n"
          "dangling tensors).");
  f.positional("FILE_OR_DIR",
               "model.onnx, a model folder (genai_config.json names the file) or a .gguf file");
  f.choice("--format", {"text", "json"}, "output format", "text");
  f.i64("--accuracy-level", "L", "show kernels as with `nbits run --accuracy-level L`", std::nullopt, 0, 4);
  f.choice("--scales", {"fp32", "fp16"},
           "show kernels as with `nbits run --scales` (fp16: names carry an 'h')", "fp32");
  f.i64("-t,--threads", "N",
        "show kernels and packed formats as with `nbits run -t N` (0 = all hardware threads; GGUF K-quants "
        "pack at the file's size from 2 threads)",
        0, 0, 1024);
  f.flag("--no-session", "do not load the model into the runtime (attributes only)");
  if (auto rc = f.parse(args)) return *rc;
  std::optional<int> level;
  if (f.has("--accuracy-level")) level = static_cast<int>(f.get_i64("--accuracy-level"));
  const std::string arg = f.get_positional(0);
  json r;
  if (gguf::is_gguf_path(arg)) {
    const json g = gguf_summary(gguf::File::open(arg));
    if (g.contains("error") || !g["unsupported"].empty()) {  // nothing more to show
      if (f.get_str("--format") == "json")
        std::printf(
            "%s\n",
            json{{"model", arg}, {"gguf", g}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
      else
        print_gguf(g);
      return 1;
    }
    r = inspect_model(
        arg, [&] { return gguf::build_model(gguf::File::open(arg), 4).model; }, level,
        !f.get_flag("--no-session"), f.get_str("--scales") == "fp16",
        static_cast<int>(f.get_i64("--threads")));
    r["gguf"] = g;
  } else {
    const std::string path = model_file(arg);
    r = inspect_model(
        path, [&] { return onnx::load_model(path); }, level, !f.get_flag("--no-session"),
        f.get_str("--scales") == "fp16", static_cast<int>(f.get_i64("--threads")));
  }
  if (f.get_str("--format") == "json")
    std::printf("%s\n", r.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  else
    print_text(r);
  return 0;
}

}  // namespace

NBITS_COMMAND("inspect", "show a model's graph, MatMulNBits kernels and warnings", inspect_main);

}  // namespace nbits::cli
