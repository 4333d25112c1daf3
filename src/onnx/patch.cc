#include "onnx/patch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/error.h"
#include "base/mapped_file.h"
#include "onnx/chunks.h"
#include "onnx/model.h"
#include "onnx/wire.h"

namespace nbits::onnx {

namespace fs = std::filesystem;
using wire::Field;
using wire::Reader;

namespace {

constexpr std::string_view kAttrName = "accuracy_level";

std::span<const uint8_t> whole(const Field& f) { return {f.start, static_cast<size_t>(f.end - f.start)}; }

std::vector<uint8_t> level_attribute(int64_t level) {
  std::vector<uint8_t> a;
  wire::put_bytes_field(a, 1, kAttrName);
  wire::put_int_field(a, 3, level);
  wire::put_int_field(a, 20, static_cast<int64_t>(AttrType::kInt));
  return a;
}

// The attribute's name and, when it is an INT, its value.
void read_attribute(const wire::Source& src, std::span<const uint8_t> bytes, std::string_view& name,
                    std::optional<int64_t>& value) {
  Reader r(src, bytes);
  Field f;
  int32_t type = 0;
  std::optional<int64_t> i;
  while (r.next(f)) {
    if (f.number == 1 && f.type == wire::kLen) name = f.str();
    if (f.number == 3) i = wire::as_int64(src, f, "AttributeProto.i");
    if (f.number == 20) type = wire::as_int32(src, f, "AttributeProto.type");
  }
  value = (type == static_cast<int32_t>(AttrType::kInt) || (type == 0 && i)) ? i : std::nullopt;
}

// nullopt when the node is not a MatMulNBits or already has exactly the level.
std::optional<Chunks> patch_node(const wire::Source& src, std::span<const uint8_t> bytes, int64_t level,
                                 PatchStats& stats) {
  std::string_view op_type, domain;
  int level_attrs = 0;
  bool same = false;
  {
    Reader r(src, bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == 4 && f.type == wire::kLen) op_type = f.str();
      if (f.number == 7 && f.type == wire::kLen) domain = f.str();
      if (f.number == 5 && f.type == wire::kLen) {
        std::string_view name;
        std::optional<int64_t> value;
        read_attribute(src, f.bytes, name, value);
        if (name == kAttrName) {
          ++level_attrs;
          same = value && *value == level;
        }
      }
    }
  }
  if (op_type != "MatMulNBits" || domain != "com.microsoft") return std::nullopt;
  ++stats.nodes;
  if (level_attrs == 1 && same) return std::nullopt;
  ++stats.changed;
  if (level_attrs == 0) ++stats.added;
  const std::vector<uint8_t> attr = level_attribute(level);
  Chunks out;
  bool written = false;
  Reader r(src, bytes);
  Field f;
  while (r.next(f)) {
    if (f.number == 5 && f.type == wire::kLen) {
      std::string_view name;
      std::optional<int64_t> value;
      read_attribute(src, f.bytes, name, value);
      if (name == kAttrName) {
        if (!written) wire::put_bytes_field(out.tail(), 5, std::span<const uint8_t>(attr));
        written = true;  // later duplicates are dropped
        continue;
      }
    }
    out.ref(whole(f));
  }
  if (!written) wire::put_bytes_field(out.tail(), 5, std::span<const uint8_t>(attr));
  return out;
}

Chunks patch_graph(const wire::Source& src, std::span<const uint8_t> bytes, int64_t level,
                   PatchStats& stats) {
  Chunks out;
  Reader r(src, bytes);
  Field f;
  while (r.next(f)) {
    if (f.number == 1 && f.type == wire::kLen) {
      if (auto node = patch_node(src, f.bytes, level, stats)) {
        out.message(1, std::move(*node));
        continue;
      }
    }
    out.ref(whole(f));
  }
  return out;
}

Chunks patch_chunks(const wire::Source& src, std::span<const uint8_t> model, int64_t level,
                    PatchStats& stats) {
  NBITS_CHECK(level >= 0 && level <= 4, "accuracy_level must be 0..4, got ", level);
  if (model.empty()) src.fail("empty file (not an ONNX model)");
  Chunks out;
  Reader r(src, model);
  Field f;
  while (r.next(f)) {
    if (f.number == 7 && f.type == wire::kLen) {
      out.message(7, patch_graph(src, f.bytes, level, stats));
    } else {
      out.ref(whole(f));
    }
  }
  return out;
}

std::string dir_of(const std::string& path) {
  const fs::path p = fs::path(path).parent_path();
  return p.empty() ? "." : p.string();
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

bool same_contents(const std::string& a, const std::string& b) {
  const MappedFile fa(a), fb(b);
  return fa.size() == fb.size() && (fa.size() == 0 || std::memcmp(fa.data(), fb.data(), fa.size()) == 0);
}

}  // namespace

std::vector<uint8_t> patch_accuracy_level(std::span<const uint8_t> model, int64_t level, PatchStats* stats,
                                          const std::string& label) {
  wire::Source src{label, model.data(), model.size()};
  PatchStats local;
  const Chunks out = patch_chunks(src, model, level, stats != nullptr ? *stats : local);
  return out.flatten();
}

PatchStats patch_model_file(const std::string& in, const std::string& out, int64_t level, bool force) {
  NBITS_CHECK(level >= 0 && level <= 4, "accuracy_level must be 0..4, got ", level);
  const Model m = load_model(in);  // full validation, including external data
  NBITS_CHECK(!same_file(in, out), "refusing to overwrite the input ", in, " (write to another path)");
  std::error_code ec;
  NBITS_CHECK(!fs::is_directory(out, ec), out, " is a directory (give the output .onnx path)");

  // External data files to place next to OUT (checked before anything is written).
  const std::string in_dir = dir_of(in), out_dir = dir_of(out);
  NBITS_CHECK(fs::is_directory(out_dir, ec), "output directory ", out_dir, " does not exist");
  std::vector<std::pair<std::string, std::string>> to_link;  // (src, dst)
  if (!fs::equivalent(in_dir, out_dir, ec)) {
    for (const auto& [location, file] : m.external_files) {
      const std::string src = in_dir + "/" + location, dst = out_dir + "/" + location;
      if (fs::exists(dst, ec)) {
        if (same_file(src, dst) || same_contents(src, dst)) continue;
        NBITS_CHECK(force, dst, " already exists and differs from ", src, " (use --force to replace it)");
      }
      to_link.emplace_back(src, dst);
    }
  }

  PatchStats stats;
  wire::Source src{in, m.file->data(), m.file->size()};
  const Chunks patched = patch_chunks(src, m.file->bytes(), level, stats);
  const std::string tmp = out + ".tmp" + std::to_string(::getpid());
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) fail("cannot create ", tmp, ": ", std::strerror(errno));
    try {
      patched.write(f, tmp);
    } catch (...) {
      std::fclose(f);
      std::remove(tmp.c_str());
      throw;
    }
    if (std::fclose(f) != 0) {
      std::remove(tmp.c_str());
      fail("cannot write ", tmp, ": ", std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    fail("cannot rename ", tmp, " to ", out, ": ", std::strerror(e));
  }

  for (const auto& [from, to] : to_link) {
    fs::create_directories(fs::path(to).parent_path(), ec);
    fs::remove(to, ec);
    ec.clear();
    fs::create_hard_link(from, to, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      NBITS_CHECK(!ec, "cannot copy ", from, " to ", to, ": ", ec.message());
    }
    stats.linked_files.push_back(to);
  }
  load_model(out);  // the result must load (external data included)
  return stats;
}

}  // namespace nbits::onnx
