#include "modelgen/bench_run.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/cpu_features.h"
#include "base/error.h"
#include "base/memory_stats.h"
#include "base/timer.h"
#include "kernels/matmul_nbits.h"
#include "llm/generator.h"
#include "modelgen/bandwidth.h"
#include "modelgen/traffic.h"

namespace nbits::modelgen {
namespace {

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// One prefill of `prompt` deterministic ids then `decode` greedy steps; appends timings.
void one_rep(llm::Generator& gen, const BenchOptions& opt, BenchRun& r, bool record, bool profile_phases) {
  gen.reset();
  std::vector<int32_t> ids(static_cast<size_t>(opt.prompt));
  const int64_t V = std::max<int64_t>(gen.vocab_size(), 2);
  for (int64_t i = 0; i < opt.prompt; ++i)
    ids[static_cast<size_t>(i)] = static_cast<int32_t>((1 + i * 7919) % V);
  if (profile_phases) gen.session().reset_profile();
  Stopwatch sw;
  auto logits = gen.append(ids);
  const double pms = sw.elapsed_ms();
  if (profile_phases) {
    r.prefill_profile = gen.session().profile();
    gen.session().reset_profile();
  }
  if (record) r.prefill_ms.push_back(pms);
  int32_t next = argmax(logits);
  for (int64_t t = 0; t < opt.decode; ++t) {
    sw.restart();
    logits = gen.append(std::span<const int32_t>(&next, 1));
    const double ms = sw.elapsed_ms();
    if (record) r.decode_ms.push_back(ms);
    next = argmax(logits);
  }
  if (profile_phases) r.decode_profile = gen.session().profile();
}

}  // namespace

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double x = p * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(x);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (x - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

std::vector<BenchRun> run_bench(const BenchOptions& opt) {
  NBITS_CHECK(opt.prompt >= 1, "bench: prompt length must be >= 1");
  NBITS_CHECK(opt.decode >= 1, "bench: decode length must be >= 1");
  NBITS_CHECK(opt.reps >= 1, "bench: reps must be >= 1");
  NBITS_CHECK(!opt.threads.empty(), "bench: no thread counts");
  std::vector<BenchRun> runs;
  for (int t : opt.threads) {
    NBITS_CHECK(t >= 1 && t <= 1024, "bench: ", t, " is not a valid thread count");
    BenchRun r;
    r.threads = t;
    if (opt.bandwidth_gbs > 0) {
      r.bandwidth_gbs = opt.bandwidth_gbs, r.bandwidth_source = "flag";
    } else {
      std::fprintf(stderr, "bench: measuring read bandwidth, %d thread(s)\n", t);
      r.bandwidth_gbs = measure_read_bandwidth(t, static_cast<size_t>(opt.bandwidth_mb) << 20, 5).median_gbs;
      r.bandwidth_source = "measured";
    }
    graph::SessionOptions so = opt.session;
    so.threads = t;
    so.profile = opt.profile;
    std::fprintf(stderr, "bench: loading %s with %d thread(s)\n", opt.model_dir.c_str(), t);
    release_free_heap();  // what the previous thread count's model left in the heap
    reset_peak_memory();
    r.rss_before_load = static_cast<int64_t>(memory_stats().rss_bytes);
    Stopwatch sw;
    auto gen = opt.load ? opt.load(so, opt.prompt + opt.decode + 1)
                        : llm::Generator::load(opt.model_dir, so, opt.prompt + opt.decode + 1);
    r.load_ms = sw.elapsed_ms();
    r.peak_rss_load = static_cast<int64_t>(memory_stats().peak_bytes);
    r.matmuls = gen->session().matmul_nbits_info();
    // Streamed per token: every packed weight (MatMulNBits, half-precision MatMul); of a
    // mixture-of-experts layer, the k experts of n a token uses.
    r.weight_bytes = static_cast<int64_t>(gen->session().streamed_weight_bytes());
    for (const auto& m : r.matmuls) {
      QuantSpec q;
      q.bits = m.bits, q.block = m.block_size, q.asym = m.zero_points;
      r.onnx_weight_bytes += matmul_nbits_bytes(m.K, m.N, q);
    }
    const auto& c = gen->config();
    ModelShape s;
    s.layers = c.num_hidden_layers, s.kv_heads = c.num_key_value_heads, s.head_size = c.head_size;
    // kv_bytes_per_position counts fp32 elements; an fp16 cache is half that, an int8 one (q8) a
    // quarter plus the 4-byte scale of each row of head_size.
    const graph::DType kv_dtype = gen->session().input_dtype(llm::format_layer_name(c.past_key_pattern, 0));
    const double kv_scale = kv_dtype == graph::DType::kI8
                                ? static_cast<double>(c.head_size + 4) / static_cast<double>(4 * c.head_size)
                                : static_cast<double>(graph::dtype_size(kv_dtype)) / 4.0;
    r.kv_dtype = graph::dtype_name(kv_dtype);
    r.kv_bytes =
        static_cast<int64_t>((static_cast<double>(opt.prompt) + static_cast<double>(opt.decode) / 2) *
                             static_cast<double>(kv_bytes_per_position(s)) * kv_scale);
    BenchOptions warm = opt;
    warm.prompt = std::min<int64_t>(opt.prompt, 8),
    warm.decode = std::min<int64_t>(opt.decode, 4);  // fits the context
    one_rep(*gen, warm, r, false, false);
    for (int rep = 0; rep < opt.reps; ++rep) {
      std::fprintf(stderr, "bench: %d thread(s), rep %d/%d\n", t, rep + 1, opt.reps);
      one_rep(*gen, opt, r, true, opt.profile && rep + 1 == opt.reps);
    }
    const graph::Session& session = gen->session();
    r.peak_rss = static_cast<int64_t>(memory_stats().peak_bytes);
    r.mapped_weight_bytes = static_cast<int64_t>(session.mapped_weight_bytes());
    r.owned_weight_bytes = static_cast<int64_t>(session.weight_bytes()) - r.mapped_weight_bytes;
    r.released_bytes = static_cast<int64_t>(session.released_bytes());
    r.kv_cache_bytes = static_cast<int64_t>(gen->kv_cache_bytes());
    r.arena_bytes = static_cast<int64_t>(session.arena_bytes());
    runs.push_back(std::move(r));
  }
  return runs;
}

namespace {

nlohmann::ordered_json profile_json(const std::vector<graph::ProfileEntry>& entries, int64_t steps) {
  std::map<std::string, std::pair<int64_t, double>> by_op, by_kernel;
  double total = 0;
  for (const auto& e : entries) {
    by_op[e.op_type].first += e.calls, by_op[e.op_type].second += e.total_ms;
    if (e.op_type.rfind("MatMulNBits", 0) == 0)  // also the group nodes (MatMulNBitsGroup, ...SiluMul)
      by_kernel[e.kernel].first += e.calls, by_kernel[e.kernel].second += e.total_ms;
    total += e.total_ms;
  }
  nlohmann::ordered_json j;
  j["steps"] = steps;
  j["total_ms"] = total;
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  for (const auto& [op, v] : ops)
    j["op_types"].push_back({{"op_type", op}, {"calls", v.first}, {"ms", v.second}});
  for (const auto& [k, v] : by_kernel)
    j["matmul_kernels"].push_back({{"kernel", k}, {"calls", v.first}, {"ms", v.second}});
  std::vector<graph::ProfileEntry> nodes = entries;
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  for (const auto& e : nodes)
    j["nodes"].push_back({{"name", e.name},
                          {"op_type", e.op_type},
                          {"kernel", e.kernel},
                          {"calls", e.calls},
                          {"ms", e.total_ms}});
  return j;
}

}  // namespace

nlohmann::ordered_json bench_json(const BenchOptions& opt, const std::vector<BenchRun>& runs) {
  nlohmann::ordered_json j;
  j["model"] = opt.model_dir;
  j["prompt_tokens"] = opt.prompt;
  j["decode_tokens"] = opt.decode;
  j["reps"] = opt.reps;
  j["cpu"] = cpu_features().describe();
  j["kernel_sets_left_out"] = kernels::kernel_sets_left_out();
  for (const auto& r : runs) {
    nlohmann::ordered_json x;
    const double dec = percentile(r.decode_ms, 0.5);
    const double pre = percentile(r.prefill_ms, 0.5);
    const int64_t bytes = r.weight_bytes + r.kv_bytes;
    const double floor = floor_ms(bytes, r.bandwidth_gbs);
    x["threads"] = r.threads;
    x["load_ms"] = r.load_ms;
    x["prefill_ms_median"] = pre;
    x["prefill_tok_s"] = pre > 0 ? static_cast<double>(opt.prompt) * 1e3 / pre : 0.0;
    x["decode_ms_median"] = dec;
    x["decode_ms_p10"] = percentile(r.decode_ms, 0.1);
    x["decode_ms_p90"] = percentile(r.decode_ms, 0.9);
    x["decode_tok_s"] = dec > 0 ? 1e3 / dec : 0.0;
    x["weight_bytes_per_token"] = r.weight_bytes;
    x["onnx_weight_bytes_per_token"] = r.onnx_weight_bytes;
    x["kv_bytes_per_token"] = r.kv_bytes;
    x["kv_dtype"] = r.kv_dtype;
    x["bytes_per_token"] = bytes;
    x["achieved_gbs"] = dec > 0 ? static_cast<double>(bytes) / (dec * 1e-3) * 1e-9 : 0.0;
    x["bandwidth_gbs"] = r.bandwidth_gbs;
    x["bandwidth_source"] = r.bandwidth_source;
    x["floor_ms"] = floor;
    x["fraction_of_floor"] = dec > 0 ? floor / dec : 0.0;
    if (opt.file_weight_bytes > 0) {
      const double file_floor = floor_ms(opt.file_weight_bytes + r.kv_bytes, r.bandwidth_gbs);
      x["file_weight_bytes_per_token"] = opt.file_weight_bytes;
      x["file_floor_ms"] = file_floor;
      x["fraction_of_file_floor"] = dec > 0 ? file_floor / dec : 0.0;
    }
    std::map<std::string, int> kernels, prefill;
    for (const auto& m : r.matmuls) kernels[m.kernel]++, prefill[m.prefill_kernel]++;
    x["matmul_kernels_at_load"] = kernels;
    x["matmul_prefill_kernels_at_load"] = prefill;
    const int64_t budget = r.owned_weight_bytes + r.kv_cache_bytes + r.arena_bytes;
    x["peak_rss_bytes"] = r.peak_rss;
    x["peak_rss_load_bytes"] = r.peak_rss_load;
    x["rss_before_load_bytes"] = r.rss_before_load;
    x["owned_weight_bytes"] = r.owned_weight_bytes;
    x["mapped_weight_bytes"] = r.mapped_weight_bytes;
    x["released_bytes"] = r.released_bytes;
    x["kv_cache_bytes"] = r.kv_cache_bytes;
    x["arena_bytes"] = r.arena_bytes;
    x["peak_rss_over_weights_kv_arena"] =
        budget > 0 ? static_cast<double>(r.peak_rss) / static_cast<double>(budget) : 0.0;
    x["decode_ms_all"] = r.decode_ms;
    x["prefill_ms_all"] = r.prefill_ms;
    if (opt.profile) {
      x["profile_prefill"] = profile_json(r.prefill_profile, 1);
      x["profile_decode"] = profile_json(r.decode_profile, opt.decode);
    }
    j["runs"].push_back(x);
  }
  return j;
}

}  // namespace nbits::modelgen
