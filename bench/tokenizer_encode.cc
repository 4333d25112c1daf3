// Tokenizer throughput: load time of Qwen2.5's 11 MB tokenizer.json, and single-thread encode of
// ~1 MB of mixed text (the shared case strings joined by newlines, repeated). The Hugging Face
// library is timed on the same text by tests/tokenizer/node/bench.js.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "support/source_dir.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string shared(const std::string& rel) {
  const char* env = std::getenv("NBITS_SHARED");
  return std::string(env && *env ? env : std::string(nbits::testing::source_dir()) + "/../shared") + "/" +
         rel;
}

const std::string& mixed_text() {
  static const std::string text = [] {
    auto doc =
        nlohmann::json::parse(nbits::read_text_file(shared("tokenizers/cases/tokenizer_cases_qwen2.5.json")));
    std::string unit;
    for (const auto& c : doc["cases"]) unit += c["text"].get<std::string>() + "\n";
    std::string t;
    while (t.size() < (1u << 20)) t += unit;
    return t;
  }();
  return text;
}

void BM_Load(benchmark::State& state, const char* dir) {
  for (auto _ : state) benchmark::DoNotOptimize(nbits::Tokenizer::load(shared(dir)));
}

void BM_Encode(benchmark::State& state, const char* dir) {
  nbits::Tokenizer tok = nbits::Tokenizer::load(shared(dir));
  const std::string& text = mixed_text();
  for (auto _ : state) benchmark::DoNotOptimize(tok.encode(text, false));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK_CAPTURE(BM_Load, qwen, "tokenizers/qwen2.5")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, qwen, "tokenizers/qwen2.5")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, smollm2, "tokenizers/smollm2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, tinyllama, "tokenizers/tinyllama")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
