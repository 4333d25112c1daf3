// nbits make-model: writes a random-weight model of a real architecture's shape
// in onnxruntime-genai's CPU layout, for benchmarks and differential tests.
#include "modelgen/make_model.h"

#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/timer.h"
#include "cli/command.h"
#include "cli/common.h"
#include "modelgen/gguf_writer.h"
#include "modelgen/shapes.h"

namespace nbits::cli {
namespace {

const char* kHelp =
    "usage: nbits make-model --arch qwen2.5-0.5b|smollm2-360m|tinyllama-1.1b|custom -o DIR\n"
    "         [--bits 4|8] [--block 32] [--asym] [--accuracy-level 4] [--embedding gather|shared]\n"
    "         [--seed 1] [--tokenizer-from DIR] [--threads 2]\n"
    "         [--hidden N --layers N --heads N --kv-heads N --head-size 64 --intermediate N --vocab N\n"
    "          --context N --rope-theta F --rms-eps F --qkv-bias --tied]   (custom, or to override a "
    "preset)\n"
    "  Writes DIR/model.onnx + model.onnx.data (genai CPU graph: GroupQueryAttention, packed QKV\n"
    "  MatMulNBits, SkipSimplifiedLayerNormalization, quantized lm_head), DIR/genai_config.json and\n"
    "  the tokenizer files of --tokenizer-from. Weights: seeded random (std 0.02, norms ~1),\n"
    "  quantized with ONNX Runtime's block-wise formulas. --embedding gather: fp32 Gather table;\n"
    "  shared: GatherBlockQuantized on the lm_head codes (tied models only).\n"
    "  --gguf FILE: also write the same float weights as GGUF for llama.cpp (Q4_0 / Q8_0, block 32,\n"
    "  vocabulary from --tokenizer-from); --gguf-only: skip the ONNX files.\n";

int make_model_main(const std::vector<std::string>& args) {
  Flags f("make-model", "", "");
  f.set_help(kHelp);
  f.str("--arch", "NAME", "shape preset or custom");
  f.str("-o,--out", "DIR", "output folder");
  f.i64("--bits", "4|8", "weight bits", 4);
  f.i64("--block", "N", "quantization block", 32);
  f.flag("--asym", "zero points");
  f.i64("--accuracy-level", "L", "MatMulNBits accuracy_level", 4);
  f.str("--embedding", "gather|shared", "embedding layout", false, "gather");
  f.i64("--seed", "N", "random seed", 1);
  f.str("--tokenizer-from", "DIR", "tokenizer files to copy");
  f.i64("-t,--threads", "N", "threads", 2);
  // Shape overrides (custom, or over a preset): absent ones keep the preset's value.
  for (const char* name : {"--hidden", "--layers", "--heads", "--kv-heads", "--head-size", "--intermediate",
                           "--vocab", "--context"})
    f.i64(name, "N", "shape", std::nullopt);
  f.f64("--rope-theta", "F", "rotary base", std::nullopt);
  f.f64("--rms-eps", "F", "RMSNorm epsilon", std::nullopt);
  f.flag("--qkv-bias", "q/k/v projections with bias");
  f.flag("--tied", "lm_head tied to the embedding");
  f.flag("--quiet", "no progress lines");
  f.str("--gguf", "FILE", "also write GGUF");
  f.flag("--gguf-only", "skip the ONNX files");
  if (auto rc = f.parse(args)) return *rc;
  NBITS_CHECK(f.has("--arch"), "make-model: --arch is required (see --help)");
  const std::string arch = f.get_str("--arch");
  modelgen::MakeModelOptions opt;
  if (arch == "custom") {
    opt.shape.arch = "custom";
    opt.shape.type = "llama";
  } else {
    opt.shape = modelgen::shape_preset(arch);
  }
  auto& s = opt.shape;
  auto i64 = [&](const char* name, int64_t& field) {
    if (f.has(name)) field = f.get_i64(name);
  };
  i64("--hidden", s.hidden);
  i64("--layers", s.layers);
  i64("--heads", s.heads);
  i64("--kv-heads", s.kv_heads);
  i64("--head-size", s.head_size);
  i64("--intermediate", s.intermediate);
  i64("--vocab", s.vocab);
  i64("--context", s.context);
  if (f.has("--rope-theta")) s.rope_theta = static_cast<float>(f.get_f64("--rope-theta"));
  if (f.has("--rms-eps")) s.rms_eps = static_cast<float>(f.get_f64("--rms-eps"));
  if (f.get_flag("--qkv-bias")) s.qkv_bias = true;
  if (f.get_flag("--tied")) s.tied = true;
  if (s.qkv_bias) s.type = "qwen2";
  s.validate();
  opt.quant.bits = static_cast<int>(f.get_i64("--bits"));
  opt.quant.block = static_cast<int>(f.get_i64("--block"));
  opt.quant.asym = f.get_flag("--asym");
  opt.quant.accuracy_level = static_cast<int>(f.get_i64("--accuracy-level"));
  const std::string emb = f.get_str("--embedding");
  NBITS_CHECK(emb == "gather" || emb == "shared", "make-model: --embedding must be gather or shared (got '",
              emb, "')");
  opt.embedding = emb == "gather" ? modelgen::EmbeddingMode::kGather : modelgen::EmbeddingMode::kShared;
  opt.seed = static_cast<uint64_t>(f.get_i64("--seed"));
  opt.tokenizer_from = f.get_str("--tokenizer-from");
  opt.threads = static_cast<int>(f.get_i64("--threads"));
  NBITS_CHECK(opt.threads >= 1 && opt.threads <= 256, "make-model: --threads must be 1..256");
  opt.out_dir = f.get_str("--out");
  const std::string gguf = f.get_str("--gguf");
  const bool gguf_only = f.get_flag("--gguf-only");
  NBITS_CHECK(!gguf_only || !gguf.empty(), "make-model: --gguf-only needs --gguf FILE");
  NBITS_CHECK(gguf_only || !opt.out_dir.empty(), "make-model: -o DIR is required");
  const bool quiet = f.get_flag("--quiet");
  opt.progress = [quiet](const std::string& m) {
    if (!quiet) std::fprintf(stderr, "make-model: %s\n", m.c_str());
  };
  Stopwatch sw;
  if (!gguf.empty()) {
    const int64_t n = modelgen::write_gguf(opt, gguf);
    std::printf("wrote %s (%s %s as %s, %.1f MB) in %.1f s\n", gguf.c_str(), arch.c_str(),
                opt.quant.describe().c_str(), opt.quant.bits == 4 ? "Q4_0" : "Q8_0",
                static_cast<double>(n) / 1e6, sw.elapsed_s());
    if (gguf_only) return 0;
    sw.restart();
  }
  const auto r = modelgen::make_model(opt);
  std::printf("wrote %s (%s %s, %.1f MB data, %.1f MB MatMulNBits weights) in %.1f s\n", r.onnx_path.c_str(),
              arch.c_str(), opt.quant.describe().c_str(), static_cast<double>(r.data_bytes) / 1e6,
              static_cast<double>(r.matmul_bytes) / 1e6, sw.elapsed_s());
  return 0;
}

}  // namespace

NBITS_COMMAND("make-model", "write a random-weight genai-layout model of a given shape", make_model_main);

}  // namespace nbits::cli
