// Mixture-of-experts routing: from a row's router logits to the experts it uses and their
// weights, as llama.cpp's build_moe_ffn computes them (the reference the GGUF MoE models follow):
//   probabilities p = softmax(logits) (kSoftmax) or sigmoid(logits) (kSigmoid), or the logits
//   themselves (kSoftmaxAfterTopK: the top-k logits are soft-maxed among themselves, Mixtral's
//   and gpt-oss's order);
//   the k experts of highest p, in descending order; an exact tie goes to the lower expert index
//   (llama.cpp's std::sort leaves the order of exact ties unspecified);
//   weights w_j = p of the j-th expert, divided by max(sum_j w_j, 2^-14) when `normalize`
//   (the renormalised top-k of Qwen3-MoE, Mixtral, Granite-MoE), times `scale` when it is
//   neither 0 nor 1 (the file's expert_weights_scale).
// The softmax is fp32 with a double sum, as ggml_soft_max.
#pragma once

#include <cstdint>

namespace nbits::kernels {

enum class ExpertGating { kSoftmax, kSigmoid, kSoftmaxAfterTopK };

struct ExpertRouting {
  int64_t n_expert = 0;
  int64_t k = 0;  // experts used per row, 1 <= k <= n_expert
  ExpertGating gating = ExpertGating::kSoftmax;
  bool normalize = false;
  float scale = 0.0f;  // 0 or 1: none
};

// logits [rows, n_expert] -> ids [rows, k] and weights [rows, k].
void route_experts(const ExpertRouting& r, const float* logits, int64_t rows, int32_t* ids, float* weights);

// The narrowest routing decision the calling thread made since reset_routing_margin(): over its
// rows, min (l_k - l_{k+1}) / max_e |l_e|, l sorted router logits (the gap between the last chosen
// expert and the first one left out, relative to the logits' scale); +inf when k = n_expert.
// Two runtimes whose activations round differently route a row alike only where this exceeds
// their noise: tests/gguf treats a divergence after a narrower decision as a near-tie.
double routing_margin();
void reset_routing_margin();

// Name of a gating function as the op attribute spells it ("softmax", "sigmoid",
// "softmax_after_topk"); parse returns false for anything else.
const char* gating_name(ExpertGating g);
bool parse_gating(const char* name, ExpertGating& g);

}  // namespace nbits::kernels
