// A tiny stand-in for graph::Session with the decoder's I/O: it writes each new
// token id into row `position` of layer 0's K/V cache and predicts
// next = (7 * sum of the cached ids + total_length) % vocab. Tests the
// generator's cache handling (sharing, chunked prefill) without a model.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/session.h"

namespace nbits::llm::testing {

class FakeSession : public graph::Session {
 public:
  static constexpr int64_t kVocab = 50;
  static constexpr int kLayers = 2;

  // The rule, for tests to compute expected sequences.
  static int32_t predict(const std::vector<int32_t>& cached) {
    int64_t sum = 0;
    for (int32_t t : cached) sum += t;
    return static_cast<int32_t>((7 * sum + static_cast<int64_t>(cached.size())) % kVocab);
  }

  FakeSession() : logits_(kVocab) {}

  std::unique_ptr<graph::Session> fork() const override { return std::make_unique<FakeSession>(); }

  std::vector<std::string> input_names() const override {
    std::vector<std::string> n = {"input_ids", "attention_mask"};
    for (int l = 0; l < kLayers; ++l) {
      n.push_back("past_key_values." + std::to_string(l) + ".key");
      n.push_back("past_key_values." + std::to_string(l) + ".value");
    }
    return n;
  }
  std::vector<std::string> output_names() const override {
    std::vector<std::string> n = {"logits"};
    for (int l = 0; l < kLayers; ++l) {
      n.push_back("present." + std::to_string(l) + ".key");
      n.push_back("present." + std::to_string(l) + ".value");
    }
    return n;
  }
  graph::DType input_dtype(std::string_view name) const override {
    return name == "input_ids" || name == "attention_mask" ? graph::DType::kI64 : graph::DType::kF32;
  }
  graph::DType output_dtype(std::string_view) const override { return graph::DType::kF32; }
  std::string output_producer(std::string_view name) const override {
    return name == "logits" ? "MatMul" : "GroupQueryAttention";
  }
  void bind_input(std::string_view name, const graph::Tensor& t) override { bind(inputs_, name, t); }
  void bind_output(std::string_view name, const graph::Tensor& t) override { bind(outputs_, name, t); }

  void run() override {
    const graph::Tensor& ids = get(inputs_, "input_ids");
    const graph::Tensor& mask = get(inputs_, "attention_mask");
    const graph::Tensor& past = get(inputs_, "past_key_values.0.key");
    const graph::Tensor& present = get(outputs_, "present.0.key");
    NBITS_CHECK(past.data == present.data, "fake: past and present are not one buffer");
    NBITS_CHECK(ids.shape.rank == 2 && mask.shape.rank == 2, "fake: bad ranks");
    const int64_t S = ids.shape[1], T = mask.shape[1], past_len = T - S;
    const int64_t cap = past.shape[2], H = past.shape[3];
    NBITS_CHECK(past_len >= 0 && T <= cap, "fake: bad lengths");
    for (int64_t j = 0; j < T; ++j) NBITS_CHECK(mask.as<int64_t>()[j] == 1, "fake: mask not ones");
    float* k = past.as<float>();
    for (int64_t s = 0; s < S; ++s) k[(past_len + s) * H] = static_cast<float>(ids.as<int64_t>()[s]);
    int64_t sum = 0;
    for (int64_t j = 0; j < T; ++j) sum += static_cast<int64_t>(k[j * H]);
    std::fill(logits_.begin(), logits_.end(), 0.0f);
    logits_[static_cast<size_t>((7 * sum + T) % kVocab)] = 1.0f;
    out_ = graph::Tensor{graph::DType::kF32, graph::Shape{1, 1, kVocab}, logits_.data()};
    last_S = S;
    last_T = T;
    ++runs;
  }
  const graph::Tensor& output(std::string_view name) const override {
    NBITS_CHECK(name == "logits", "fake: no output ", name);
    return out_;
  }
  void set_last_position_only(std::string_view, bool) override {}
  void set_positions_as_decode(bool) override {}
  std::vector<graph::MatMulNBitsInfo> matmul_nbits_info() const override { return {}; }
  std::vector<graph::ProfileEntry> profile() const override { return {}; }
  void reset_profile() override {}
  size_t weight_bytes() const override { return 0; }
  size_t arena_bytes() const override { return 0; }

  int64_t last_S = 0, last_T = 0, runs = 0;

 private:
  using Map = std::map<std::string, graph::Tensor, std::less<>>;
  void bind(Map& m, std::string_view name, const graph::Tensor& t) {
    auto it = m.find(name);
    if (it == m.end())
      m.emplace(std::string(name), t);
    else
      it->second = t;
  }
  const graph::Tensor& get(const Map& m, std::string_view name) const {
    auto it = m.find(name);
    NBITS_CHECK(it != m.end(), "fake: '", name, "' not bound");
    return it->second;
  }
  Map inputs_, outputs_;
  std::vector<float> logits_;
  graph::Tensor out_;
};

}  // namespace nbits::llm::testing
