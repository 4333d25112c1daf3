#include "kernels/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace nbits::kernels {
namespace {

// y = softmax(x) over n values: fp32 exponentials of x - max, summed in double (ggml_soft_max).
void softmax(const float* x, int64_t n, float* y) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - mx);
    sum += y[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

thread_local double t_margin = INFINITY;

}  // namespace

double routing_margin() { return t_margin; }
void reset_routing_margin() { t_margin = INFINITY; }

void route_experts(const ExpertRouting& r, const float* logits, int64_t rows, int32_t* ids, float* weights) {
  NBITS_CHECK(r.n_expert > 0 && r.k >= 1 && r.k <= r.n_expert, "expert routing: k=", r.k, " of ", r.n_expert,
              " experts");
  const int64_t E = r.n_expert, k = r.k;
  thread_local std::vector<float> p;
  thread_local std::vector<int32_t> order;
  p.resize(static_cast<size_t>(E));
  order.resize(static_cast<size_t>(E));
  for (int64_t row = 0; row < rows; ++row) {
    const float* x = logits + row * E;
    switch (r.gating) {
      case ExpertGating::kSoftmax:
        softmax(x, E, p.data());
        break;
      case ExpertGating::kSigmoid:
        for (int64_t e = 0; e < E; ++e) p[static_cast<size_t>(e)] = 1.0f / (1.0f + std::exp(-x[e]));
        break;
      case ExpertGating::kSoftmaxAfterTopK:
        std::memcpy(p.data(), x, static_cast<size_t>(E) * sizeof(float));
        break;
    }
    for (int64_t e = 0; e < E; ++e) order[static_cast<size_t>(e)] = static_cast<int32_t>(e);
    // Descending probability; a NaN sorts last; an exact tie to the lower index.
    const auto before = [&](int32_t a, int32_t b) {
      const float pa = p[static_cast<size_t>(a)], pb = p[static_cast<size_t>(b)];
      if (pa > pb) return true;
      if (pa < pb) return false;
      if (std::isnan(pa) != std::isnan(pb)) return std::isnan(pb);
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    if (k < E) {  // the decision's margin, in the logits (monotone in p for every gating)
      float scale = 0;
      for (int64_t e = 0; e < E; ++e) scale = std::max(scale, std::fabs(x[e]));
      const int32_t last = order[static_cast<size_t>(k - 1)];
      float next = -INFINITY;
      for (int64_t j = k; j < E; ++j) next = std::max(next, x[order[static_cast<size_t>(j)]]);
      if (scale > 0) t_margin = std::min(t_margin, static_cast<double>(x[last] - next) / scale);
    }
    int32_t* id = ids + row * k;
    float* w = weights + row * k;
    for (int64_t j = 0; j < k; ++j) {
      id[j] = order[static_cast<size_t>(j)];
      w[j] = p[static_cast<size_t>(id[j])];
    }
    if (r.gating == ExpertGating::kSoftmaxAfterTopK) softmax(w, k, w);
    if (r.normalize) {
      float sum = 0;
      for (int64_t j = 0; j < k; ++j) sum += w[j];
      sum = std::max(sum, 6.103515625e-5f);  // llama.cpp's clamp: the smallest normal fp16
      for (int64_t j = 0; j < k; ++j) w[j] /= sum;
    }
    if (r.scale != 0.0f && r.scale != 1.0f)
      for (int64_t j = 0; j < k; ++j) w[j] *= r.scale;
  }
}

const char* gating_name(ExpertGating g) {
  switch (g) {
    case ExpertGating::kSoftmax:
      return "softmax";
    case ExpertGating::kSigmoid:
      return "sigmoid";
    case ExpertGating::kSoftmaxAfterTopK:
      return "softmax_after_topk";
  }
  return "?";
}

bool parse_gating(const char* name, ExpertGating& g) {
  for (ExpertGating c : {ExpertGating::kSoftmax, ExpertGating::kSigmoid, ExpertGating::kSoftmaxAfterTopK})
    if (std::strcmp(name, gating_name(c)) == 0) {
      g = c;
      return true;
    }
  return false;
}

}  // namespace nbits::kernels
