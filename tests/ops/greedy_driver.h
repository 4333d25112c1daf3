// Test-local driver: runs a Session the way onnxruntime-genai does (prefill,
// then one token per step, KV cache bound as ONE shared past/present buffer).
#pragma once

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/session.h"

namespace nbits::testing {

class GreedyDriver {
 public:
  GreedyDriver(const std::string& dir, const graph::SessionOptions& opt = {}) {
    std::ifstream f(dir + "/genai_config.json");
    const auto cfg = nlohmann::json::parse(f);
    const auto& d = cfg["model"]["decoder"];
    layers_ = d["num_hidden_layers"];
    kv_heads_ = d["num_key_value_heads"];
    head_ = d["head_size"];
    max_len_ = cfg["model"]["context_length"];
    vocab_ = cfg["model"]["vocab_size"];
    session = graph::Session::load(dir + "/model.onnx", opt);
    kv_.resize(2 * layers_);
    for (int l = 0; l < layers_; ++l)
      for (int w = 0; w < 2; ++w) {
        auto& buf = kv_[2 * l + w];
        buf.assign(static_cast<size_t>(kv_heads_) * max_len_ * head_, 0.0f);
        graph::Tensor t{graph::DType::kF32, {1, kv_heads_, max_len_, head_}, buf.data()};
        const char* kind = w == 0 ? "key" : "value";
        session->bind_input("past_key_values." + std::to_string(l) + "." + kind, t);
        session->bind_output("present." + std::to_string(l) + "." + kind, t);
      }
    ids_.reserve(max_len_);
    mask_.assign(max_len_, 1);
  }

  // Feeds `tokens` (all at once) after `past_` cached tokens; returns the
  // logits of the last fed position. Allocates nothing once warm.
  const float* step(const int64_t* tokens, int64_t n) {
    graph::Tensor ids{graph::DType::kI64, {1, n}, const_cast<int64_t*>(tokens)};
    graph::Tensor mask{graph::DType::kI64, {1, past_ + n}, mask_.data()};
    session->bind_input("input_ids", ids);
    session->bind_input("attention_mask", mask);
    session->run();
    past_ += n;
    const graph::Tensor& logits = session->output("logits");
    return logits.as<const float>() + (logits.shape[1] - 1) * vocab_;
  }
  // Logits row i of the last run (all positions unless last-position-only).
  const float* logits_row(int64_t i) const {
    return session->output("logits").as<const float>() + i * vocab_;
  }

  int vocab() const { return vocab_; }
  int max_len() const { return max_len_; }
  int64_t past() const { return past_; }

  static int argmax(const float* x, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
      if (x[i] > x[best]) best = i;
    return best;
  }

  // Greedy generation from `prompt` until `total` tokens (prompt included) or
  // a stop token; returns the whole sequence (prompt + generated).
  std::vector<int64_t> generate(std::vector<int64_t> seq, size_t total, const std::vector<int64_t>& stop,
                                std::vector<std::vector<float>>* first_logits = nullptr) {
    const float* lg = step(seq.data(), static_cast<int64_t>(seq.size()));
    while (seq.size() < total) {
      if (first_logits && first_logits->size() < 3) first_logits->emplace_back(lg, lg + vocab_);
      const int64_t next = argmax(lg, vocab_);
      seq.push_back(next);
      bool done = false;
      for (int64_t s : stop) done = done || s == next;
      if (done || seq.size() >= total) break;
      lg = step(&seq.back(), 1);
    }
    return seq;
  }

  std::unique_ptr<graph::Session> session;

 private:
  int layers_ = 0, kv_heads_ = 0, head_ = 0, max_len_ = 0, vocab_ = 0;
  int64_t past_ = 0;
  std::vector<std::vector<float>> kv_;
  std::vector<int64_t> ids_, mask_;
};

}  // namespace nbits::testing
