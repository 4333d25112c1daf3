// nbits bench: prefill and decode speed of a genai model, bytes per token,
// achieved bandwidth and the fraction of the memory-bandwidth floor.
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/bench_spec.h"
#include "cli/command.h"
#include "cli/common.h"
#include "cli/kernel_report.h"
#include "gguf/model_builder.h"
#include "kernels/kernel_choice.h"
#include "modelgen/bench_run.h"

namespace nbits::cli {
namespace {

const char* kHelp =
    "usage: nbits bench -m MODEL_DIR|FILE.gguf [-t 1,2] [-p 128] [-n 64] [--reps 3] [--format text|json]\n"
    "                   [--profile] [--bandwidth-gbs G] [--bandwidth-mb 512] [--accuracy-level L]\n"
    "                   [--scales fp32|fp16] [--kv-cache model|f32|f16|q8] [--requantize-float keep|q8|q4]\n"
    "  Per thread count: loads the model, warms up, then --reps times prefills -p deterministic\n"
    "  token ids and decodes -n tokens greedily. Reports prefill tok/s (median over reps), decode\n"
    "  ms/token (median, p10, p90 over every decoded token), bytes read per token (weights\n"
    "  packed at load + the KV cache at the mean decode context), achieved GB/s and the fraction\n"
    "  of the floor bytes/bandwidth (bandwidth measured briefly unless --bandwidth-gbs is given).\n"
    "  Memory: peak RSS from just before load to the end (Linux VmHWM) next to what the model\n"
    "  needs: weights copied or packed at load + KV cache + activation arena.\n"
    "  --profile: time per op type, per node and per MatMulNBits kernel path (last rep).\n"
    "  --accuracy-level L: override every MatMulNBits' accuracy_level (4 = int8 activations).\n"
    "  --scales fp16: pack MatMulNBits scales in half precision (see `nbits run --help`); default fp32.\n"
    "  --kv-cache f16 / q8: keep the KV cache in half precision / int8 rows (see `nbits run --help`);\n"
    "    default: the model's.\n"
    "  --requantize-float q8|q4: float MatMul weights re-quantized at load (see `nbits run --help`).\n"
    "  --spec lookup | --spec draft --draft-model FILE [--draft-max N] [--prompt-file FILE]: instead,\n"
    "    per thread count, plain and speculative greedy decoding of one chat prompt (a short\n"
    "    code-editing request unless --prompt-file), -n tokens, --reps alternating rounds: decode\n"
    "    ms/token of each (medians), the speed-up, accepted / drafted tokens, tokens per model step;\n"
    "    exit 1 if a speculative run's ids differ from plain decoding's.\n"
    "  JSON fields: see docs/PERFORMANCE.md.\n";

void print_profile(const char* phase, const nlohmann::ordered_json& p) {
  const double steps = p["steps"].get<double>();
  std::printf("  profile, %s (%.0f step%s, %.2f ms per step in nodes):\n", phase, steps,
              steps == 1 ? "" : "s", p["total_ms"].get<double>() / steps);
  for (const auto& o : p["op_types"])
    std::printf("    %-34s %8.3f ms/step  %5.1f%%\n", o["op_type"].get<std::string>().c_str(),
                o["ms"].get<double>() / steps, 100.0 * o["ms"].get<double>() / p["total_ms"].get<double>());
  if (p.contains("matmul_kernels"))
    for (const auto& k : p["matmul_kernels"])
      std::printf("    kernel %-27s %8.3f ms/step  %lld calls\n", k["kernel"].get<std::string>().c_str(),
                  k["ms"].get<double>() / steps, static_cast<long long>(k["calls"].get<int64_t>()));
  int shown = 0;
  for (const auto& n : p["nodes"]) {
    if (++shown > 8) break;
    std::printf("    node %-50s %8.3f ms/step\n", n["name"].get<std::string>().c_str(),
                n["ms"].get<double>() / steps);
  }
}

int bench_main(const std::vector<std::string>& args) {
  Flags f("bench", "", "");
  f.set_help(kHelp);
  f.str("-m,--model", "MODEL_DIR|FILE.gguf", "model folder or GGUF file");
  f.ints("-t,--threads", "1,2", "thread counts (default 1,2)");
  f.i64("-p,--prompt", "N", "prompt tokens", 128);
  f.i64("-n,--decode", "N", "tokens decoded", 64);
  f.i64("--reps", "N", "repetitions", 3);
  f.str("--format", "text|json", "output format", false, "text");
  f.flag("--profile", "time per op type, node and kernel path");
  f.f64("--bandwidth-gbs", "G", "memory bandwidth (0: measure)", 0.0);
  f.i64("--bandwidth-mb", "MB", "array size of the bandwidth probe", 512);
  f.i64("--accuracy-level", "L", "override every MatMulNBits' accuracy_level", std::nullopt);
  f.str("--scales", "fp32|fp16", "MatMulNBits scale precision", false, "fp32");
  f.str("--kv-cache", "model|f32|f16|q8", "KV cache dtype", false, "model");
  f.str("--requantize-float", "keep|q8|q4", "float MatMul weights re-quantized at load", false, "keep");
  f.choice("--spec", {"off", "lookup", "draft"},
           "instead: plain against speculative greedy decoding of one chat prompt (-n tokens,\n"
           "                             --reps alternating rounds): ms/token, speed-up, acceptance, tokens\n"
           "                             per model step, and a check that the ids are plain decoding's",
           "off");
  f.str("--draft-model", "FILE", "with --spec draft: the draft model (same tokenizer)");
  f.i64("--draft-max", "N", "with --spec: the longest draft", 8, 1, 32);
  f.str("--prompt-file", "FILE", "with --spec: the user message (default: a short code-editing request)");
  if (auto rc = f.parse(args)) return *rc;
  modelgen::BenchOptions o;
  o.model_dir = f.get_str("--model");
  NBITS_CHECK(!o.model_dir.empty(), "bench: -m MODEL_DIR is required");
  o.threads.clear();
  for (int64_t t : f.has("--threads") ? f.get_ints("--threads") : std::vector<int64_t>{1, 2})
    o.threads.push_back(static_cast<int>(t));
  o.prompt = f.get_i64("--prompt");
  o.decode = f.get_i64("--decode");
  o.reps = static_cast<int>(f.get_i64("--reps"));
  o.bandwidth_gbs = f.get_f64("--bandwidth-gbs");
  o.bandwidth_mb = f.get_i64("--bandwidth-mb");
  o.profile = f.get_flag("--profile");
  if (f.has("--accuracy-level")) {
    const int64_t level = f.get_i64("--accuracy-level");
    NBITS_CHECK(level >= 0 && level <= 4, "bench: --accuracy-level must be 0..4 (got ", level, ")");
    o.session.accuracy_level = static_cast<int>(level);
  }
  const std::string scales = f.get_str("--scales");
  NBITS_CHECK(scales == "fp32" || scales == "fp16", "bench: --scales must be fp32 or fp16 (got '", scales,
              "')");
  o.session.fp16_scales = scales == "fp16";
  o.session.kv_cache = graph::parse_kv_cache(f.get_str("--kv-cache"));
  const std::string requant = f.get_str("--requantize-float");
  NBITS_CHECK(requant == "keep" || requant == "q8" || requant == "q4",
              "bench: --requantize-float must be keep, q8 or q4 (got '", requant, "')");
  o.session.requantize_float = requant == "q8" ? 8 : requant == "q4" ? 4 : 0;
  const std::string format = f.get_str("--format");
  NBITS_CHECK(format == "text" || format == "json", "bench: --format must be text or json (got '", format,
              "')");
  NBITS_CHECK(o.bandwidth_gbs >= 0, "bench: --bandwidth-gbs must be >= 0");
  NBITS_CHECK(o.bandwidth_mb >= 1, "bench: --bandwidth-mb must be >= 1");

  if (f.get_str("--spec") != "off" || f.has("--draft-model")) {
    SpecBenchOptions so;
    so.model = o.model_dir;
    so.spec = f.has("--draft-model") && f.get_str("--spec") == "off" ? "draft" : f.get_str("--spec");
    if (f.has("--draft-model")) so.draft_model = f.get_str("--draft-model");
    so.draft_max = f.get_i64("--draft-max");
    so.threads = o.threads;
    so.prompt =
        f.has("--prompt-file") ? read_text_file(f.get_str("--prompt-file")) : default_spec_bench_prompt();
    so.decode = o.decode;
    so.reps = o.reps;
    so.session = o.session;
    so.json = format == "json";
    return run_spec_bench(so);
  }
  if (gguf::is_gguf_path(o.model_dir)) {  // a GGUF file: the model synthesised in memory
    o.load = [path = o.model_dir](const graph::SessionOptions& so, int64_t max_length) {
      return gguf::load_generator(path, so, max_length);
    };
    o.file_weight_bytes = gguf::file_bytes_per_token(gguf::File::open(o.model_dir));
  }
  const auto runs = modelgen::run_bench(o);
  auto j = modelgen::bench_json(o, runs);
  j["kernel_choice"] = kernel_choice_json();
  j["kernel_choice_file"] = kernels::kernel_choice_file();
  if (format == "json") {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::string left_out = j["kernel_sets_left_out"];
  if (!left_out.empty()) left_out = "; this build has no " + left_out + " kernels (a host build)";
  std::printf("%s  prompt %lld, decode %lld, %d rep(s), cpu: %s%s\n", o.model_dir.c_str(),
              static_cast<long long>(o.prompt), static_cast<long long>(o.decode), o.reps,
              j["cpu"].get<std::string>().c_str(), left_out.c_str());
  print_kernel_choices(stdout);
  for (const auto& r : j["runs"]) {
    std::printf(
        "threads %d: prefill %.1f tok/s (%.1f ms) | decode %.2f ms/token (p10 %.2f, p90 %.2f) = %.1f tok/s\n"
        "  reads %.1f MB/token (weights %.1f + KV %.2f %s) -> %.1f GB/s of %.1f GB/s %s; floor %.2f ms, "
        "%.0f%% of it\n",
        r["threads"].get<int>(), r["prefill_tok_s"].get<double>(), r["prefill_ms_median"].get<double>(),
        r["decode_ms_median"].get<double>(), r["decode_ms_p10"].get<double>(),
        r["decode_ms_p90"].get<double>(), r["decode_tok_s"].get<double>(),
        r["bytes_per_token"].get<double>() / 1e6, r["weight_bytes_per_token"].get<double>() / 1e6,
        r["kv_bytes_per_token"].get<double>() / 1e6, r["kv_dtype"].get<std::string>().c_str(),
        r["achieved_gbs"].get<double>(), r["bandwidth_gbs"].get<double>(),
        r["bandwidth_source"].get<std::string>().c_str(), r["floor_ms"].get<double>(),
        100.0 * r["fraction_of_floor"].get<double>());
    if (r.contains("file_floor_ms"))
      std::printf(
          "  the file's weights: %.1f MB/token (as llama.cpp streams them; nbits holds %.2fx): floor %.2f "
          "ms, "
          "%.0f%% of it\n",
          r["file_weight_bytes_per_token"].get<double>() / 1e6,
          r["weight_bytes_per_token"].get<double>() / r["file_weight_bytes_per_token"].get<double>(),
          r["file_floor_ms"].get<double>(), 100.0 * r["fraction_of_file_floor"].get<double>());
    const double mib = 1024.0 * 1024.0;
    std::printf(
        "  memory: peak RSS %.1f MiB (%.1f during load) = %.2fx of weights %.1f + KV %.1f + arena %.1f MiB "
        "(program before load %.1f MiB; %.1f MiB read from the mapped file as touched; %.1f MiB of original "
        "weights let "
        "go after packing)\n",
        r["peak_rss_bytes"].get<double>() / mib, r["peak_rss_load_bytes"].get<double>() / mib,
        r["peak_rss_over_weights_kv_arena"].get<double>(), r["owned_weight_bytes"].get<double>() / mib,
        r["kv_cache_bytes"].get<double>() / mib, r["arena_bytes"].get<double>() / mib,
        r["rss_before_load_bytes"].get<double>() / mib, r["mapped_weight_bytes"].get<double>() / mib,
        r["released_bytes"].get<double>() / mib);
    if (o.profile) {
      std::printf("  (timings above include profiling overhead)\n");
      print_profile("prefill", r["profile_prefill"]);
      print_profile("decode", r["profile_decode"]);
    }
  }
  return 0;
}

}  // namespace

NBITS_COMMAND("bench", "prefill/decode speed, bytes per token and fraction of the bandwidth floor",
              bench_main);

}  // namespace nbits::cli
