// `nbits patch`: rewrites the accuracy_level attribute of every com.microsoft
// MatMulNBits node, copying every other byte of the protobuf verbatim (only the
// enclosing lengths, graph and node, are re-encoded).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nbits::onnx {

struct PatchStats {
  int nodes = 0;                          // MatMulNBits nodes seen
  int changed = 0;                        // nodes whose accuracy_level was different or absent
  int added = 0;                          // of those, nodes that had no accuracy_level
  std::vector<std::string> linked_files;  // external data files hard-linked or copied next to OUT
};

// The patched model bytes. `label` names the input in errors. Throws nbits::Error on malformed input.
std::vector<uint8_t> patch_accuracy_level(std::span<const uint8_t> model, int64_t level,
                                          PatchStats* stats = nullptr, const std::string& label = "model");

// Validates IN (load_model), writes OUT (never IN itself), and when OUT is in another
// directory hard-links (or copies) each external data file next to it; refuses to
// replace a different existing file of that name unless force. Verifies OUT loads.
PatchStats patch_model_file(const std::string& in, const std::string& out, int64_t level, bool force = false);

}  // namespace nbits::onnx
