// The measurement behind `nbits bench`: prefill and decode timings of a genai
// model through llm::Generator, bytes read per token, achieved bandwidth and
// the fraction of the memory-bandwidth floor; optional per-op profile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/session.h"
#include "llm/generator.h"

namespace nbits::modelgen {

struct BenchOptions {
  std::string model_dir;
  std::vector<int> threads = {1, 2};
  int64_t prompt = 128;
  int64_t decode = 64;
  int reps = 3;
  double bandwidth_gbs = 0;  // 0 = measure (bandwidth_mb array, 5 passes)
  int64_t bandwidth_mb = 512;
  bool profile = false;
  graph::SessionOptions session;  // load options (threads and profile are set per run)
  // Loads the model (KV capacity max_length); null: llm::Generator::load(model_dir). The
  // CLI sets it for GGUF files (gguf/model_builder.h), which this room cannot see.
  std::function<std::unique_ptr<llm::Generator>(const graph::SessionOptions&, int64_t max_length)> load;
  // The weights' bytes per decode step as the model FILE stores them (a GGUF: what llama.cpp
  // streams), reported beside nbits' own with its floor; 0: not known (not reported).
  int64_t file_weight_bytes = 0;
};

struct BenchRun {
  int threads = 1;
  double load_ms = 0;
  std::vector<double> prefill_ms;  // one per rep
  std::vector<double> decode_ms;   // one per decoded token, all reps
  int64_t weight_bytes = 0;        // MatMulNBits packed bytes (what a decode step streams)
  int64_t onnx_weight_bytes = 0;   // the same weights as stored in the ONNX file
  int64_t kv_bytes = 0;            // KV read per token at the mean decode context (in the cache's dtype)
  std::string kv_dtype;            // the cache's dtype (graph::dtype_name: float, float16, int8 for q8, ...)
  double bandwidth_gbs = 0;
  std::string bandwidth_source;                                      // "measured" or "flag"
  std::vector<graph::ProfileEntry> prefill_profile, decode_profile;  // --profile only
  std::vector<graph::MatMulNBitsInfo> matmuls;
  // Memory (Linux; zeros where /proc is missing). The peak is the high-water
  // mark from just before load to the end of the last rep.
  int64_t rss_before_load = 0;      // the program itself (binary, libraries, tokenizer-free)
  int64_t peak_rss = 0;             // whole process
  int64_t peak_rss_load = 0;        // the high-water mark when load returned
  int64_t owned_weight_bytes = 0;   // packed MatMulNBits weights + other constants copied at load
  int64_t mapped_weight_bytes = 0;  // constants read from the mapped file at run (resident as touched)
  int64_t released_bytes = 0;       // original initializer bytes whose pages were let go after packing
  int64_t kv_cache_bytes = 0;       // K and V cache allocated for prompt + decode + 1 positions
  int64_t arena_bytes = 0;          // the session's activation buffers
};

// Runs every thread count; progress lines go to stderr. Throws nbits::Error.
std::vector<BenchRun> run_bench(const BenchOptions& opt);

// p in [0, 1], linear interpolation between order statistics.
double percentile(std::vector<double> v, double p);

// The JSON report (fields documented in docs/PERFORMANCE.md).
nlohmann::ordered_json bench_json(const BenchOptions& opt, const std::vector<BenchRun>& runs);

}  // namespace nbits::modelgen
