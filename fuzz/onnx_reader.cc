// libFuzzer target: the ONNX model parser must refuse any input with nbits::Error
// (never crash, leak, hang or allocate without bound), and the accuracy_level patcher
// must accept exactly what parses.
//   fuzz_onnx_reader CORPUS_DIR -max_total_time=60   (seed: ../shared/models/stories260K/*/model.onnx)
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.h"
#include "onnx/model.h"
#include "onnx/patch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  bool parsed = false;
  try {
    const nbits::onnx::Model m = nbits::onnx::parse_model(bytes);
    parsed = true;
    // Touch what a consumer would read.
    size_t sum = 0;
    for (const auto& t : m.graph.initializers) sum += t.bytes.empty() ? 0 : t.bytes[t.bytes.size() - 1];
    for (const auto& n : m.graph.nodes) sum += n.attributes.size();
    (void)sum;
  } catch (const nbits::Error&) {
  }
  if (parsed) {
    // A model that parses also patches, and the patched bytes parse again.
    const auto patched = nbits::onnx::patch_accuracy_level(bytes, 4);
    nbits::onnx::parse_model(patched);
  }
  return 0;
}
