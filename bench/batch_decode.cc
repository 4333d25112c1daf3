// Aggregate decode tokens/s of B sessions on one Model: stepped one by one (each
// generate_next_token() in turn, as separate sessions sharing the worker pool do) against one
// batched step for all (nbits::generate_next_tokens: one pass over the weights per step).
//
//   bench_batch_decode MODEL_DIR [--threads T] [--batch 1,2,4] [--steps N] [--prompt P] [--rounds R]
//
// Each session gets its own P-token prompt (random ids, greedy) prefilled first (not timed); then N
// decode steps are timed. Every round runs both modes; the median of R rounds is reported, and the
// batched ids must equal the one-by-one ids (else exit 1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "nbits/nbits.h"

namespace {

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> r;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t comma = s.find(',', pos);
    r.push_back(std::stoll(s.substr(pos, comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One round: B sessions prefilled, then `steps` decode steps; returns tokens/s and the ids.
double run_round(const std::shared_ptr<nbits::Model>& model, int64_t B, int64_t steps, int64_t prompt,
                 bool batched, std::vector<std::vector<int32_t>>* ids) {
  std::vector<std::unique_ptr<nbits::Generator>> gens;
  nbits::GenerationOptions go;
  go.temperature = 0.0f;
  go.context = prompt + steps + 8;
  const int64_t V = model->vocab_size();
  for (int64_t b = 0; b < B; ++b) {
    gens.push_back(std::make_unique<nbits::Generator>(model, go));
    std::vector<int32_t> p(static_cast<size_t>(prompt));
    uint64_t x = 12345 + static_cast<uint64_t>(b) * 7919;
    for (auto& t : p) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      t = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(V - 10)) + 3;
    }
    gens.back()->append_tokens(p);
    gens.back()->generate_next_token();  // the first token: from the prefill's logits
  }
  std::vector<nbits::Generator*> all;
  for (auto& g : gens) all.push_back(g.get());
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    if (batched) {
      nbits::generate_next_tokens(all);
    } else {
      for (auto* g : all) g->generate_next_token();
    }
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ids->clear();
  for (auto& g : gens) ids->push_back(g->sequence());
  return static_cast<double>(B * steps) / sec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s MODEL_DIR [--threads T] [--batch 1,2,4] [--steps N] [--prompt P] [--rounds R]\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int threads = 1;
  std::vector<int64_t> batches = {1, 2, 4};
  int64_t steps = 32, prompt = 64, rounds = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") {
      threads = std::stoi(v);
    } else if (k == "--batch") {
      batches = parse_list(v);
    } else if (k == "--steps") {
      steps = std::stoll(v);
    } else if (k == "--prompt") {
      prompt = std::stoll(v);
    } else if (k == "--rounds") {
      rounds = std::stoll(v);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  nbits::ModelOptions mo;
  mo.threads = threads;
  auto model = nbits::Model::load(dir, mo);
  std::printf("threads=%d steps=%lld prompt=%lld rounds=%lld\n", threads, static_cast<long long>(steps),
              static_cast<long long>(prompt), static_cast<long long>(rounds));
  std::printf("%4s %14s %14s %8s\n", "B", "one-by-one", "batched", "speedup");
  int rc = 0;
  for (int64_t B : batches) {
    std::vector<double> solo, batch;
    for (int64_t r = 0; r < rounds; ++r) {
      std::vector<std::vector<int32_t>> a, b;
      solo.push_back(run_round(model, B, steps, prompt, false, &a));
      batch.push_back(run_round(model, B, steps, prompt, true, &b));
      if (a != b) {
        std::fprintf(stderr, "B=%lld: batched ids differ from one-by-one ids\n", static_cast<long long>(B));
        rc = 1;
      }
    }
    const double s = median(solo), b = median(batch);
    std::printf("%4lld %10.2f tok/s %8.2f tok/s %7.2fx\n", static_cast<long long>(B), s, b, b / s);
    std::fflush(stdout);
  }
  return rc;
}
