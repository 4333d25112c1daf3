// The op of a mixture-of-experts layer, whichever file described it: nbits.internal
// MixtureOfExperts (the GGUF MoE architectures, ops/moe.cc) and com.microsoft MoE / QMoE
// (onnxruntime-genai's builder, ops/ort_moe.cc) parse their own inputs into an ExpertLayerSpec;
// this packs every expert's projections one expert at a time (quantized ones through the
// MatMulNBits dispatch point, float ones as float x16 panels) and runs the router
// (kernels/expert_routing.h) and the routed feed-forward (kernels/expert_ffn.h).
//   inputs of the op: 0 X [..., hidden], 1 router logits [..., n_expert].
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/expert_ffn.h"
#include "kernels/expert_routing.h"
#include "kernels/float_x16_matmul.h"
#include "kernels/matmul_nbits.h"
#include "ops/ops.h"

namespace nbits::ops {

// One projection of every expert, N x K = inter x hidden (gate, up) or hidden x inter (down),
// given one expert at a time so that a parser that must rearrange the file's rows (ORT's
// interleaved gate/up) copies one expert, not the layer: `quantized(e)` (a MatMulNBits weight of N
// rows) or, where that is empty, `floats(e)` ([N, K] elements of float_elem). The views stay valid
// until the next call; done(e), when set, is called once expert e is packed (its source may go).
struct ExpertProjection {
  const char* name = "";  // "gate", "up", "down": for messages and nbits_info
  std::function<kernels::QuantizedMatrix(int64_t e)> quantized;
  std::function<const void*(int64_t e)> floats;
  kernels::X16Float float_elem = kernels::X16Float::kF32;
  std::function<void(int64_t e)> done;
  std::vector<float> bias;  // empty, or [n_expert * N]
};

struct ExpertLayerSpec {
  kernels::ExpertRouting routing;
  kernels::ExpertActivation act;
  int64_t hidden = 0, inter = 0;
  int accuracy_level = 4;    // MatMulNBits': 4 int8 activations, else fp32
  ExpertProjection proj[3];  // gate, up, down
};

// Checks the sizes against n_expert / hidden / inter, packs, and returns the op (outputs fp32).
std::unique_ptr<Op> make_expert_layer(OpBuild& b, ExpertLayerSpec spec);

}  // namespace nbits::ops
