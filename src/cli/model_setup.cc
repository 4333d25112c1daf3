#include "cli/model_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/model_loader.h"
#include "base/error.h"
#include "base/timer.h"

namespace nbits::cli {

void add_model_flags(Flags& f) {
  f.str("-m,--model", "DIR",
        "model: an onnxruntime-genai folder (genai_config.json), a Hugging Face Optimum /\n"
        "                             transformers.js folder (config.json, onnx/model*.onnx) or one of its "
        ".onnx\n"
        "                             files, or a .gguf file",
        true);
  f.str("--variant", "V",
        "which onnx/model_V.onnx of an Optimum folder: q4, q4f16, int8, uint8, quantized, fp16, fp32\n"
        "                             (default: the first present in that order)",
        false);
  f.i64("-t,--threads", "N", "threads (0 = all hardware threads)", 0, 0, 1024);
  f.i64("--accuracy-level", "L", "override every MatMulNBits' accuracy_level (4 = int8 activations)",
        std::nullopt, 0, 4);
  f.i64("--ctx", "N", "KV cache length in tokens (default: the config's max_length / context_length)",
        std::nullopt, 1);
  // Continuation lines are indented to the help column of Flags::help().
  f.choice(
      "--scales", {"fp32", "fp16"},
      "MatMulNBits scale storage. fp32: exact agreement with ONNX Runtime.\n"
      "                             fp16: rounds each scale to half precision (~2^-11 relative, a tenth\n"
      "                             of the int8 activation rounding of accuracy_level 4) and cuts ~10%\n"
      "                             of the bytes per token for int4 block 32; kernel names then carry\n"
      "                             an 'h' (qgemv_q4x16h_avx2); a matrix whose scales do not fit fp16\n"
      "                             keeps fp32 scales",
      "fp32");
  f.choice("--kv-cache", {"model", "f32", "f16", "q8"},
           "KV cache dtype. model: as the file declares (fp16 exports: fp16); f16 halves the cache\n"
           "                             bytes of fp32 models (K/V rounded to half precision as written);\n"
           "                             q8: int8 rows + one fp32 scale per head and position, 3.8x fewer\n"
           "                             bytes than fp32 at head 64 (~0.4% of max|x| per value rounding;\n"
           "                             GroupQueryAttention models only)",
           "model");
  f.choice(
      "--requantize-float", {"keep", "q8", "q4"},
      "constant float (fp32/fp16/bf16) MatMul weights: keep = as stored; q8 / q4 = re-quantized at\n"
      "                             load to symmetric 8/4-bit blocks of 32 (like GGUF Q8_0 / Q4_0), int8\n"
      "                             activations: for q4 exports whose tied lm_head stays float\n"
      "                             (onnx-community model_q4.onnx). Changes the results slightly",
      "keep");
  f.flag("--profile", "print per-op, per-node and per-kernel timings to stderr");
}

int requantize_bits(const std::string& v) { return v == "q8" ? 8 : v == "q4" ? 4 : 0; }

void add_sampling_flags(Flags& f, int64_t default_n) {
  f.i64("-n,--n-predict", "N", "tokens to generate at most", default_n, 0);
  f.f64("--temp", "T", "temperature; 0 = greedy (default: the config's do_sample/temperature)", std::nullopt,
        0);
  f.i64("--top-k", "K", "keep the K most likely tokens, 0 = off (default: the config's)", std::nullopt, 0);
  f.f64("--top-p", "P", "nucleus: smallest set with mass >= P (default: the config's)", std::nullopt, 1e-6,
        1);
  f.f64("--min-p", "P", "drop tokens below P * p(max)", 0.0, 0, 1);
  f.f64("--repeat-penalty", "R", "HF repetition penalty, 1 = off (default: the config's)", std::nullopt,
        1e-3);
  f.i64("--seed", "S", "sampling seed", 0, 0);
}

bool float_weights_note(const graph::Session& session, FILE* out) {
  size_t quantized = 0;
  for (const graph::MatMulNBitsInfo& i : session.matmul_nbits_info()) quantized += i.packed_bytes;
  const size_t packed = session.packed_weight_bytes();
  if (quantized == 0 || packed <= 2 * quantized) return false;
  const double floats = static_cast<double>(packed - quantized);
  auto mb = [](double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, bytes >= 1e8 ? "%.0f MB" : "%.3g MB", bytes / 1e6);
    return std::string(buf);
  };
  std::fprintf(out,
               "note: %s of float MatMul weights (e.g. a tied fp32 lm_head) are read every token, %.1fx "
               "the %s of quantized ones; --requantize-float q4 (or q8) re-quantizes them at load: "
               "faster decode, slightly different logits\n",
               mb(floats).c_str(), floats / static_cast<double>(quantized),
               mb(static_cast<double>(quantized)).c_str());
  return true;
}

namespace {

// "loading NAME: 42%" on a terminal's stderr once a load has taken a second (nothing otherwise,
// nothing on a pipe or file); done() ends the line with the time taken. NBITS_PROGRESS_AFTER_MS
// changes the second (tests: 0).
class LoadProgress {
 public:
  explicit LoadProgress(std::string name) : name_(std::move(name)), tty_(isatty(fileno(stderr)) != 0) {
    if (const char* e = std::getenv("NBITS_PROGRESS_AFTER_MS"); e != nullptr && *e)
      after_s_ = std::atof(e) / 1e3;
  }
  void update(double fraction) {
    if (!tty_ || sw_.elapsed_s() < after_s_) return;
    const int pct = static_cast<int>(fraction * 100.0);
    if (pct == last_) return;
    last_ = pct;
    std::fprintf(stderr, "\rloading %s: %d%%", name_.c_str(), pct);
    std::fflush(stderr);
  }
  void done() const {
    if (last_ >= 0) std::fprintf(stderr, "\rloading %s: done in %.1f s\n", name_.c_str(), sw_.elapsed_s());
  }

 private:
  std::string name_;
  bool tty_;
  Stopwatch sw_;
  double after_s_ = 1.0;
  int last_ = -1;
};

}  // namespace

graph::SessionOptions session_options(const Flags& f) {
  graph::SessionOptions so;
  so.threads = static_cast<int>(f.get_i64("--threads"));
  if (f.has("--accuracy-level")) so.accuracy_level = static_cast<int>(f.get_i64("--accuracy-level"));
  so.profile = f.get_flag("--profile");
  so.fp16_scales = f.get_str("--scales") == "fp16";
  so.kv_cache = graph::parse_kv_cache(f.get_str("--kv-cache"));
  so.requantize_float = requantize_bits(f.get_str("--requantize-float"));
  const int64_t ctx = f.has("--ctx") ? f.get_i64("--ctx") : 0;
  so.max_positions = ctx;  // rope tables (and a GGUF phi3's LongRoPE choice) for the context used
  return so;
}

ModelSetup load_model_setup(const Flags& f, bool need_tokenizer) {
  return load_model_setup(f, f.get_str("--model"), need_tokenizer);
}

ModelSetup load_model_setup(const Flags& f, const std::string& path, bool need_tokenizer) {
  graph::SessionOptions so = session_options(f);
  const int64_t ctx = f.has("--ctx") ? f.get_i64("--ctx") : 0;
  auto progress = std::make_shared<LoadProgress>(path.substr(path.find_last_of('/', path.size() - 2) + 1));
  so.progress = [progress](double fraction) { progress->update(fraction); };
  api::LoadedModel m = api::load_model(path, so, need_tokenizer, f.get_str("--variant"));
  progress->done();
  // An Optimum folder holds several decoders: say which one runs when the user did not choose.
  const std::string& given = path;
  if (m.config.from_hf_config && f.get_str("--variant").empty() &&
      !(given.size() > 5 && given.compare(given.size() - 5, 5, ".onnx") == 0))
    std::fprintf(stderr, "model: %s (--variant picks another of the folder's decoders)\n",
                 m.config.model_path().c_str());
  if (so.requantize_float == 0) float_weights_note(*m.session, stderr);
  ModelSetup setup;
  setup.tokenizer = std::move(m.tokenizer);
  setup.generator = std::make_unique<llm::Generator>(m.config, std::move(m.session), ctx);
  return setup;
}

llm::SamplerOptions sampling_options(const Flags& f, const llm::GenaiConfig& config) {
  const llm::SearchConfig& s = config.search;
  llm::SamplerOptions o;
  o.temperature = static_cast<float>(f.has("--temp") ? f.get_f64("--temp") : s.temperature);
  o.greedy = f.has("--temp") ? o.temperature == 0 : !s.do_sample || o.temperature == 0;
  o.top_k = f.has("--top-k") ? f.get_i64("--top-k") : s.top_k;
  o.top_p = static_cast<float>(f.has("--top-p") ? f.get_f64("--top-p") : s.top_p);
  o.min_p = static_cast<float>(f.get_f64("--min-p"));
  o.repetition_penalty =
      static_cast<float>(f.has("--repeat-penalty") ? f.get_f64("--repeat-penalty") : s.repetition_penalty);
  o.seed = static_cast<uint64_t>(f.get_i64("--seed"));
  return o;
}

void print_profile(const graph::Session& session, FILE* out) {
  const std::vector<graph::ProfileEntry> nodes = session.profile();
  double total = 0;
  for (const auto& e : nodes) total += e.total_ms;
  if (nodes.empty() || total <= 0) {
    std::fprintf(out, "profile: no timings recorded\n");
    return;
  }
  auto pct = [&](double ms) { return 100.0 * ms / total; };
  struct Agg {
    int64_t calls = 0, nodes = 0;
    double ms = 0;
  };
  std::map<std::string, Agg> by_op, by_kernel;
  for (const auto& e : nodes) {
    Agg& a = by_op[e.op_type];
    a.calls += e.calls;
    a.nodes += 1;
    a.ms += e.total_ms;
    if (!e.kernel.empty()) {
      Agg& k = by_kernel[e.kernel];
      k.calls += e.calls;
      k.nodes += 1;
      k.ms += e.total_ms;
    }
  }
  auto sorted = [](const std::map<std::string, Agg>& m) {
    std::vector<std::pair<std::string, Agg>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    return v;
  };
  std::fprintf(out, "\nprofile: %.3f ms in %zu nodes\n%-34s %6s %10s %11s %7s\n", total, nodes.size(),
               "op type", "nodes", "calls", "total ms", "%");
  for (const auto& [op, a] : sorted(by_op))
    std::fprintf(out, "%-34s %6lld %10lld %11.3f %6.1f%%\n", op.c_str(), static_cast<long long>(a.nodes),
                 static_cast<long long>(a.calls), a.ms, pct(a.ms));
  std::vector<graph::ProfileEntry> top = nodes;
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  const size_t shown = std::min<size_t>(top.size(), 25);
  std::fprintf(out, "\n%-48s %-22s %8s %11s %7s\n", "node (slowest first)", "op type", "calls", "total ms",
               "%");
  for (size_t i = 0; i < shown; ++i) {
    const auto& e = top[i];
    std::fprintf(out, "%-48s %-22s %8lld %11.3f %6.1f%%\n", e.name.c_str(), e.op_type.c_str(),
                 static_cast<long long>(e.calls), e.total_ms, pct(e.total_ms));
  }
  if (shown < top.size()) std::fprintf(out, "(%zu more nodes)\n", top.size() - shown);
  if (!by_kernel.empty()) {
    std::fprintf(out, "\n%-34s %6s %10s %11s %7s\n", "kernel path", "nodes", "calls", "total ms", "%");
    for (const auto& [k, a] : sorted(by_kernel))
      std::fprintf(out, "%-34s %6lld %10lld %11.3f %6.1f%%\n", k.c_str(), static_cast<long long>(a.nodes),
                   static_cast<long long>(a.calls), a.ms, pct(a.ms));
  }
  const std::vector<graph::MatMulNBitsInfo> mm = session.matmul_nbits_info();
  if (!mm.empty()) {
    size_t packed = 0, fp16 = 0;
    for (const auto& m : mm) {
      packed += m.packed_bytes;
      fp16 += m.kernel.find("16h_") != std::string::npos;  // kernel names mark fp16 scales with "h"
    }
    std::fprintf(
        out,
        "\nMatMulNBits: %zu nodes, %.2f MB packed weights (streamed per decode step), %zu with fp16 scales\n",
        mm.size(), static_cast<double>(packed) / 1e6, fp16);
  }
}

}  // namespace nbits::cli
