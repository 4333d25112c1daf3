// A protobuf message under construction as a list of pieces: bytes it owns, and
// views of large payloads (initializer data, verbatim ranges of a mapped file) it
// does not copy. Lengths are known as the message is built, so nesting works
// bottom-up and the result can be streamed to a file without one big buffer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace nbits::onnx {

class Chunks {
 public:
  // Owned bytes appended here (tags, lengths, small fields).
  std::vector<uint8_t>& tail();
  // A view appended without copying; the caller keeps it alive until written.
  void ref(std::span<const uint8_t> bytes);
  // Appends child as a length-delimited field `field` (moves its pieces).
  void message(uint32_t field, Chunks&& child);
  void append(Chunks&& other);
  uint64_t size() const;

  std::vector<uint8_t> flatten() const;
  // Writes every piece to f; throws nbits::Error naming path on failure.
  void write(std::FILE* f, const std::string& path) const;

 private:
  struct Piece {
    std::vector<uint8_t> owned;
    std::span<const uint8_t> view;
    bool is_view = false;
  };
  std::vector<Piece> pieces_;
};

// Writes bytes to f or throws nbits::Error "cannot write <path>: <errno>".
void write_all(std::FILE* f, const std::string& path, std::span<const uint8_t> bytes);

}  // namespace nbits::onnx
