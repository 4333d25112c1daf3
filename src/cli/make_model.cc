// nbits make-model: writes a random-weight model of a real architecture's shape
// in onnxruntime-genai's CPU layout, for benchmarks and differential tests.
#include "modelgen/make_model.h"

#include <cstdio>
#include <string>
#include <vector>

#include "base/timer.h"
#include "cli/command.h"
#include "modelgen/arg_list.h"
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
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::printf("%s", kHelp);
      return 0;
    }
  modelgen::ArgList f(
      args, {"--arch",      "--out",     "--bits",           "--block",     "--accuracy-level",
             "--embedding", "--seed",    "--tokenizer-from", "--threads",   "--hidden",
             "--layers",    "--heads",   "--kv-heads",       "--head-size", "--intermediate",
             "--vocab",     "--context", "--rope-theta",     "--rms-eps",   "--gguf"},
      {"--asym", "--qkv-bias", "--tied", "--quiet", "--gguf-only"}, {{"-o", "--out"}, {"-t", "--threads"}});
  NBITS_CHECK(f.has("--arch"), "make-model: --arch is required (see --help)");
  const std::string arch = f.str("--arch");
  modelgen::MakeModelOptions opt;
  if (arch == "custom") {
    opt.shape.arch = "custom";
    opt.shape.type = "llama";
  } else {
    opt.shape = modelgen::shape_preset(arch);
  }
  auto& s = opt.shape;
  s.hidden = f.integer("--hidden", s.hidden);
  s.layers = f.integer("--layers", s.layers);
  s.heads = f.integer("--heads", s.heads);
  s.kv_heads = f.integer("--kv-heads", s.kv_heads);
  s.head_size = f.integer("--head-size", s.head_size);
  s.intermediate = f.integer("--intermediate", s.intermediate);
  s.vocab = f.integer("--vocab", s.vocab);
  s.context = f.integer("--context", s.context);
  s.rope_theta = static_cast<float>(f.number("--rope-theta", s.rope_theta));
  s.rms_eps = static_cast<float>(f.number("--rms-eps", s.rms_eps));
  if (f.has("--qkv-bias")) s.qkv_bias = true;
  if (f.has("--tied")) s.tied = true;
  if (s.qkv_bias) s.type = "qwen2";
  s.validate();
  opt.quant.bits = static_cast<int>(f.integer("--bits", 4));
  opt.quant.block = static_cast<int>(f.integer("--block", 32));
  opt.quant.asym = f.has("--asym");
  opt.quant.accuracy_level = static_cast<int>(f.integer("--accuracy-level", 4));
  const std::string emb = f.str("--embedding", "gather");
  NBITS_CHECK(emb == "gather" || emb == "shared", "make-model: --embedding must be gather or shared (got '",
              emb, "')");
  opt.embedding = emb == "gather" ? modelgen::EmbeddingMode::kGather : modelgen::EmbeddingMode::kShared;
  opt.seed = static_cast<uint64_t>(f.integer("--seed", 1));
  opt.tokenizer_from = f.str("--tokenizer-from");
  opt.threads = static_cast<int>(f.integer("--threads", 2));
  NBITS_CHECK(opt.threads >= 1 && opt.threads <= 256, "make-model: --threads must be 1..256");
  opt.out_dir = f.str("--out");
  const std::string gguf = f.str("--gguf");
  const bool gguf_only = f.has("--gguf-only");
  NBITS_CHECK(!gguf_only || !gguf.empty(), "make-model: --gguf-only needs --gguf FILE");
  NBITS_CHECK(gguf_only || !opt.out_dir.empty(), "make-model: -o DIR is required");
  const bool quiet = f.has("--quiet");
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
