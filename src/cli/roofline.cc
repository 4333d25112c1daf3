// nbits roofline: measured memory read bandwidth and the resulting floor on
// decode ms/token for each target model shape (bytes read per token / bandwidth).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/command.h"
#include "cli/common.h"
#include "modelgen/bandwidth.h"
#include "modelgen/shapes.h"
#include "modelgen/traffic.h"

namespace nbits::cli {
namespace {

using modelgen::QuantSpec;

struct Row {
  std::string arch;
  QuantSpec q;
};

std::vector<Row> roofline_rows() {
  auto q = [](int bits, int block, int scale_bytes = 4) {
    QuantSpec s;
    s.bits = bits;
    s.block = block;
    s.scale_bytes = scale_bytes;
    return s;
  };
  std::vector<Row> rows;
  for (const char* arch : {"qwen2.5-0.5b", "smollm2-360m", "tinyllama-1.1b"}) {
    rows.push_back({arch, q(4, 32)});
    rows.push_back({arch, q(4, 32, 2)});
    if (std::string(arch) == "qwen2.5-0.5b") rows.push_back({arch, q(4, 128)});
    rows.push_back({arch, q(8, 32)});
    rows.push_back({arch, q(8, 32, 2)});
  }
  return rows;
}

const char* kHelp =
    "usage: nbits roofline [-t 1,2] [--size-mb 1024] [--reps 7] [--context 160] [--format text|json]\n"
    "  Measures memory read bandwidth (STREAM-like sum over an array far larger than the caches,\n"
    "  median of --reps passes) for each thread count, and prints per model shape the bytes a\n"
    "  decode step reads (MatMulNBits codes + fp32 scales, norms, fp32 KV at --context tokens)\n"
    "  and the floor ms/token = bytes / bandwidth. 1 GB = 1e9 bytes. Rows marked f16s: the same\n"
    "  with `--scales fp16` (half-precision scales).\n";

int roofline_main(const std::vector<std::string>& args) {
  Flags flags("roofline", "", "");
  flags.set_help(kHelp);
  flags.ints("-t,--threads", "1,2", "thread counts (default 1,2)");
  flags.i64("--size-mb", "MB", "array size", 1024);
  flags.i64("--reps", "N", "passes", 7);
  flags.i64("--context", "N", "tokens of context", 160);
  flags.str("--format", "text|json", "output format", false, "text");
  if (auto rc = flags.parse(args)) return *rc;
  const std::vector<int64_t> threads =
      flags.has("--threads") ? flags.get_ints("--threads") : std::vector<int64_t>{1, 2};
  const int64_t size_mb = flags.get_i64("--size-mb");
  const int reps = static_cast<int>(flags.get_i64("--reps"));
  const int64_t context = flags.get_i64("--context");
  const std::string format = flags.get_str("--format");
  NBITS_CHECK(format == "text" || format == "json", "--format must be text or json (got '", format, "')");
  NBITS_CHECK(size_mb >= 1, "--size-mb must be >= 1");
  NBITS_CHECK(context >= 0, "--context must be >= 0");

  std::vector<modelgen::BandwidthResult> bw;
  for (int64_t t : threads) {
    NBITS_CHECK(t >= 1 && t <= 1024, "--threads: ", t, " is not a valid thread count");
    bw.push_back(
        modelgen::measure_read_bandwidth(static_cast<int>(t), static_cast<size_t>(size_mb) << 20, reps));
  }

  nlohmann::json out;
  out["context_tokens"] = context;
  out["array_bytes"] = static_cast<int64_t>(size_mb) << 20;
  for (const auto& b : bw) {
    out["bandwidth"].push_back({{"threads", b.threads},
                                {"median_gbs", b.median_gbs},
                                {"best_gbs", b.best_gbs},
                                {"worst_gbs", b.worst_gbs},
                                {"reps", b.gbs}});
  }
  for (const auto& r : roofline_rows()) {
    const auto shape = modelgen::shape_preset(r.arch);
    const auto t = modelgen::token_traffic(shape, r.q, context);
    nlohmann::json j = {{"model", r.arch},
                        {"quant", r.q.describe()},
                        {"weight_bytes", t.weight_bytes()},
                        {"lm_head_bytes", t.lm_head_bytes},
                        {"kv_bytes", t.kv_bytes},
                        {"total_bytes", t.total()}};
    for (const auto& b : bw)
      j["floor_ms"][std::to_string(b.threads)] = modelgen::floor_ms(t.total(), b.median_gbs);
    out["models"].push_back(j);
  }

  if (format == "json") {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("read bandwidth (%lld MiB array, median of %d):\n", static_cast<long long>(size_mb), reps);
  for (const auto& b : bw)
    std::printf("  %d thread%s: %6.1f GB/s  (best %.1f, worst %.1f)\n", b.threads, b.threads == 1 ? " " : "s",
                b.median_gbs, b.best_gbs, b.worst_gbs);
  std::printf("\nbytes read per decode step at %lld tokens of context, floor = bytes / bandwidth:\n",
              static_cast<long long>(context));
  std::printf("  %-15s %-14s %10s %8s %10s", "model", "quant", "weights MB", "KV MB", "total MB");
  for (const auto& b : bw) std::printf("  floor %dT ms", b.threads);
  std::printf("\n");
  for (const auto& j : out["models"]) {
    std::printf("  %-15s %-14s %10.1f %8.2f %10.1f", j["model"].get<std::string>().c_str(),
                j["quant"].get<std::string>().c_str(), j["weight_bytes"].get<double>() / 1e6,
                j["kv_bytes"].get<double>() / 1e6, j["total_bytes"].get<double>() / 1e6);
    for (const auto& b : bw) std::printf("  %11.2f", j["floor_ms"][std::to_string(b.threads)].get<double>());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

NBITS_COMMAND("roofline", "memory bandwidth and the ms/token floor of each model shape", roofline_main);

}  // namespace nbits::cli
