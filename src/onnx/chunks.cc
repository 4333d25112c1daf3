#include "onnx/chunks.h"

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "onnx/wire.h"

namespace nbits::onnx {

std::vector<uint8_t>& Chunks::tail() {
  if (pieces_.empty() || pieces_.back().is_view) pieces_.emplace_back();
  return pieces_.back().owned;
}

void Chunks::ref(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  // Small views are cheaper copied than tracked.
  if (bytes.size() <= 256) {
    auto& t = tail();
    t.insert(t.end(), bytes.begin(), bytes.end());
    return;
  }
  Piece p;
  p.view = bytes;
  p.is_view = true;
  pieces_.push_back(std::move(p));
}

void Chunks::message(uint32_t field, Chunks&& child) {
  auto& t = tail();
  wire::put_tag(t, field, wire::kLen);
  wire::put_varint(t, child.size());
  append(std::move(child));
}

void Chunks::append(Chunks&& other) {
  for (auto& p : other.pieces_) {
    if (p.is_view) {
      pieces_.push_back(std::move(p));
    } else {
      auto& t = tail();
      if (t.empty()) {
        t = std::move(p.owned);
      } else {
        t.insert(t.end(), p.owned.begin(), p.owned.end());
      }
    }
  }
  other.pieces_.clear();
}

uint64_t Chunks::size() const {
  uint64_t n = 0;
  for (const auto& p : pieces_) n += p.is_view ? p.view.size() : p.owned.size();
  return n;
}

std::vector<uint8_t> Chunks::flatten() const {
  std::vector<uint8_t> out;
  out.reserve(size());
  for (const auto& p : pieces_) {
    if (p.is_view) {
      out.insert(out.end(), p.view.begin(), p.view.end());
    } else {
      out.insert(out.end(), p.owned.begin(), p.owned.end());
    }
  }
  return out;
}

void write_all(std::FILE* f, const std::string& path, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    fail("cannot write ", path, ": ", std::strerror(errno));
}

void Chunks::write(std::FILE* f, const std::string& path) const {
  for (const auto& p : pieces_) write_all(f, path, p.is_view ? p.view : std::span<const uint8_t>(p.owned));
}

}  // namespace nbits::onnx
