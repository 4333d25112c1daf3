// `nbits patch IN.onnx OUT.onnx --accuracy-level N [--force]`
#include "onnx/patch.h"

#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/command.h"

namespace nbits::cli {
namespace {

const char* kUsage =
    "usage: nbits patch IN.onnx OUT.onnx --accuracy-level N [--force]\n\n"
    "Sets accuracy_level=N (0..4) on every com.microsoft MatMulNBits node, copying every\n"
    "other byte of the model verbatim. When OUT is in another directory, external data\n"
    "files (model.onnx.data) are hard-linked (or copied) next to it.\n\n"
    "  --accuracy-level N  0 = unset, 1 = fp32, 2 = fp16, 3 = bf16, 4 = int8 activations\n"
    "  --force             replace a different external data file already next to OUT\n";

int patch_main(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  int64_t level = -1;
  bool force = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--force") {
      force = true;
    } else if (a == "--accuracy-level" || a.rfind("--accuracy-level=", 0) == 0) {
      std::string v;
      if (a == "--accuracy-level") {
        NBITS_CHECK(i + 1 < args.size(), "--accuracy-level needs a value (0..4)");
        v = args[++i];
      } else {
        v = a.substr(a.find('=') + 1);
      }
      NBITS_CHECK(v.size() == 1 && v[0] >= '0' && v[0] <= '4', "--accuracy-level must be 0..4, got '", v,
                  "'");
      level = v[0] - '0';
    } else if (!a.empty() && a[0] == '-') {
      fail("unknown option '", a, "' (see nbits patch --help)");
    } else {
      paths.push_back(a);
    }
  }
  if (paths.size() != 2 || level < 0) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const onnx::PatchStats s = onnx::patch_model_file(paths[0], paths[1], level, force);
  std::printf("%s: accuracy_level=%lld on %d MatMulNBits nodes (%d changed, %d added)\n", paths[1].c_str(),
              static_cast<long long>(level), s.nodes, s.changed, s.added);
  for (const auto& f : s.linked_files) std::printf("  external data placed at %s\n", f.c_str());
  return 0;
}

}  // namespace

NBITS_COMMAND("patch", "set accuracy_level on MatMulNBits nodes (byte-preserving rewrite)", patch_main);

}  // namespace nbits::cli
