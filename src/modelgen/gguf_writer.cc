#include "modelgen/gguf_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/fp16.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "modelgen/weights.h"

namespace nbits::modelgen {
namespace {

enum GgufType : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9 };
enum GgmlType : uint32_t { kGgmlF32 = 0, kGgmlQ4_0 = 2, kGgmlQ8_0 = 8 };
constexpr uint64_t kAlign = 32;

class Buf {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i32(int32_t v) { raw(&v, 4); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  std::vector<uint8_t> bytes;
};

// A tensor to write: its rows come from (kind, layer, row0 + r).
struct TensorDef {
  std::string name;
  int64_t K = 0, N = 1;  // ne0 = K, ne1 = N (N = 1 and one_d for vectors)
  bool one_d = false;
  GgmlType type = kGgmlF32;
  WeightKind kind = WeightKind::kQkv;
  int64_t layer = 0, row0 = 0;
  uint64_t offset = 0;
  int64_t row_bytes() const {
    return type == kGgmlF32 ? K * 4 : type == kGgmlQ4_0 ? K / 32 * 18 : K / 32 * 34;
  }
};

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

Vocab load_vocab(const std::string& tokenizer_dir, int64_t n_vocab) {
  Vocab v;
  v.tokens.resize(static_cast<size_t>(n_vocab));
  v.types.assign(static_cast<size_t>(n_vocab), 5);  // UNUSED
  const std::string path = tokenizer_dir + "/tokenizer.json";
  if (!tokenizer_dir.empty() && file_exists(path)) {
    const auto j = nlohmann::json::parse(read_text_file(path));
    for (const auto& [tok, id] : j["model"]["vocab"].items()) {
      const int64_t i = id.get<int64_t>();
      if (i >= 0 && i < n_vocab) v.tokens[static_cast<size_t>(i)] = tok, v.types[static_cast<size_t>(i)] = 1;
    }
    if (j.contains("added_tokens"))
      for (const auto& a : j["added_tokens"]) {
        const int64_t i = a["id"].get<int64_t>();
        if (i >= 0 && i < n_vocab)
          v.tokens[static_cast<size_t>(i)] = a["content"].get<std::string>(),
          v.types[static_cast<size_t>(i)] = a.value("special", false) ? 3 : 4;
      }
    if (j["model"].contains("merges"))
      for (const auto& m : j["model"]["merges"])
        v.merges.push_back(m.is_string() ? m.get<std::string>()
                                         : m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i].empty()) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  return v;
}

}  // namespace

void quantize_row_q4_0(const float* x, int64_t K, uint8_t* out) {
  for (int64_t b = 0; b < K / 32; ++b, x += 32, out += 18) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = float_to_fp16(d);
    std::memcpy(out, &h, 2);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x[16 + j] * id + 8.5f)));
      out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_row_q8_0(const float* x, int64_t K, uint8_t* out) {
  for (int64_t b = 0; b < K / 32; ++b, x += 32, out += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = float_to_fp16(d);
    std::memcpy(out, &h, 2);
    for (int j = 0; j < 32; ++j)
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
}

int64_t write_gguf(const MakeModelOptions& opt, const std::string& path) {
  const ModelShape& s = opt.shape;
  s.validate();
  NBITS_CHECK(opt.quant.bits == 4 || opt.quant.bits == 8, "gguf: bits must be 4 or 8");
  NBITS_CHECK(!opt.quant.asym, "gguf: Q4_0/Q8_0 are symmetric; drop --asym for --gguf");
  for (int64_t k : {s.hidden, s.q_out(), s.intermediate})
    NBITS_CHECK(k % 32 == 0, "gguf: dimension ", k, " is not a multiple of 32");
  const GgmlType qt = opt.quant.bits == 4 ? kGgmlQ4_0 : kGgmlQ8_0;
  const std::string arch = s.qkv_bias ? "qwen2" : "llama";

  std::vector<TensorDef> t;
  auto mat = [&](std::string name, WeightKind kind, int64_t layer, int64_t K, int64_t N, int64_t row0 = 0) {
    t.push_back({std::move(name), K, N, false, qt, kind, layer, row0, 0});
  };
  auto vec = [&](std::string name, WeightKind kind, int64_t layer, int64_t n, int64_t row0 = 0) {
    t.push_back({std::move(name), n, 1, true, kGgmlF32, kind, layer, row0, 0});
  };
  mat("token_embd.weight", s.tied ? WeightKind::kLmHead : WeightKind::kEmbed, 0, s.hidden, s.vocab);
  vec("output_norm.weight", WeightKind::kInputNorm, s.layers, s.hidden);
  if (!s.tied) mat("output.weight", WeightKind::kLmHead, 0, s.hidden, s.vocab);
  const int64_t kv = s.kv_heads * s.head_size;
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    vec(b + "attn_norm.weight", WeightKind::kInputNorm, i, s.hidden);
    mat(b + "attn_q.weight", WeightKind::kQkv, i, s.hidden, s.q_out(), 0);
    mat(b + "attn_k.weight", WeightKind::kQkv, i, s.hidden, kv, s.q_out());
    mat(b + "attn_v.weight", WeightKind::kQkv, i, s.hidden, kv, s.q_out() + kv);
    if (s.qkv_bias) {  // one bias row: slices of the qkv bias vector
      vec(b + "attn_q.bias", WeightKind::kQkvBias, i, s.q_out(), 0);
      vec(b + "attn_k.bias", WeightKind::kQkvBias, i, kv, s.q_out());
      vec(b + "attn_v.bias", WeightKind::kQkvBias, i, kv, s.q_out() + kv);
    }
    mat(b + "attn_output.weight", WeightKind::kO, i, s.q_out(), s.hidden);
    vec(b + "ffn_norm.weight", WeightKind::kPostNorm, i, s.hidden);
    mat(b + "ffn_gate.weight", WeightKind::kGate, i, s.hidden, s.intermediate);
    mat(b + "ffn_up.weight", WeightKind::kUp, i, s.hidden, s.intermediate);
    mat(b + "ffn_down.weight", WeightKind::kDown, i, s.intermediate, s.hidden);
  }
  uint64_t off = 0;
  for (auto& d : t) {
    d.offset = off;
    off += (static_cast<uint64_t>(d.row_bytes() * d.N) + kAlign - 1) / kAlign * kAlign;
  }

  const Vocab vocab = load_vocab(opt.tokenizer_from, s.vocab);
  Buf h;
  int64_t n_kv = 0;
  Buf kvs;
  auto key = [&](const std::string& k, uint32_t type) {
    kvs.str(k);
    kvs.u32(type);
    ++n_kv;
  };
  key("general.architecture", kString), kvs.str(arch);
  key("general.name", kString), kvs.str("nbits random " + s.arch);
  key("general.alignment", kU32), kvs.u32(kAlign);
  key("general.file_type", kU32), kvs.u32(qt == kGgmlQ4_0 ? 2 : 7);
  key(arch + ".context_length", kU32), kvs.u32(static_cast<uint32_t>(s.context));
  key(arch + ".embedding_length", kU32), kvs.u32(static_cast<uint32_t>(s.hidden));
  key(arch + ".block_count", kU32), kvs.u32(static_cast<uint32_t>(s.layers));
  key(arch + ".feed_forward_length", kU32), kvs.u32(static_cast<uint32_t>(s.intermediate));
  key(arch + ".attention.head_count", kU32), kvs.u32(static_cast<uint32_t>(s.heads));
  key(arch + ".attention.head_count_kv", kU32), kvs.u32(static_cast<uint32_t>(s.kv_heads));
  key(arch + ".attention.key_length", kU32), kvs.u32(static_cast<uint32_t>(s.head_size));
  key(arch + ".attention.value_length", kU32), kvs.u32(static_cast<uint32_t>(s.head_size));
  key(arch + ".rope.dimension_count", kU32), kvs.u32(static_cast<uint32_t>(s.head_size));
  key(arch + ".rope.freq_base", kF32), kvs.f32(s.rope_theta);
  key(arch + ".attention.layer_norm_rms_epsilon", kF32), kvs.f32(s.rms_eps);
  key("tokenizer.ggml.model", kString), kvs.str("gpt2");
  key("tokenizer.ggml.pre", kString), kvs.str("default");
  key("tokenizer.ggml.tokens", kArray), kvs.u32(kString), kvs.u64(vocab.tokens.size());
  for (const auto& tok : vocab.tokens) kvs.str(tok);
  key("tokenizer.ggml.token_type", kArray), kvs.u32(kI32), kvs.u64(vocab.types.size());
  for (int32_t ty : vocab.types) kvs.i32(ty);
  key("tokenizer.ggml.merges", kArray), kvs.u32(kString), kvs.u64(vocab.merges.size());
  for (const auto& m : vocab.merges) kvs.str(m);
  key("tokenizer.ggml.bos_token_id", kU32), kvs.u32(static_cast<uint32_t>(s.bos_token_id));
  key("tokenizer.ggml.eos_token_id", kU32), kvs.u32(static_cast<uint32_t>(s.eos_token_id));

  h.raw("GGUF", 4);
  h.u32(3);
  h.u64(t.size());
  h.u64(static_cast<uint64_t>(n_kv));
  h.raw(kvs.bytes.data(), kvs.bytes.size());
  for (const auto& d : t) {
    h.str(d.name);
    h.u32(d.one_d ? 1 : 2);
    h.u64(static_cast<uint64_t>(d.K));
    if (!d.one_d) h.u64(static_cast<uint64_t>(d.N));
    h.u32(d.type);
    h.u64(d.offset);
  }
  h.bytes.resize((h.bytes.size() + kAlign - 1) / kAlign * kAlign, 0);

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  NBITS_CHECK(f != nullptr, "gguf: cannot create '", path, "'");
  auto write = [&](const void* p, size_t n) {
    NBITS_CHECK(std::fwrite(p, 1, n, f.get()) == n, "gguf: cannot write '", path, "'");
  };
  write(h.bytes.data(), h.bytes.size());
  ThreadPool pool(opt.threads);
  uint64_t pos = 0;
  std::vector<uint8_t> data;
  for (const auto& d : t) {
    NBITS_ASSERT(pos == d.offset);
    const int64_t rb = d.row_bytes();
    data.assign(static_cast<size_t>(rb * d.N), 0);
    if (d.one_d) {
      std::vector<float> all = weight_vector(opt.seed, d.kind, d.layer, d.row0 + d.K);
      std::memcpy(data.data(), all.data() + d.row0, static_cast<size_t>(d.K) * 4);
    } else {
      pool.parallel_range(d.N, 64, [&](int64_t n0, int64_t n1) {
        std::vector<float> row(static_cast<size_t>(d.K));
        for (int64_t n = n0; n < n1; ++n) {
          weight_row(opt.seed, d.kind, d.layer, d.row0 + n, row);
          uint8_t* o = data.data() + n * rb;
          if (d.type == kGgmlQ4_0)
            quantize_row_q4_0(row.data(), d.K, o);
          else
            quantize_row_q8_0(row.data(), d.K, o);
        }
      });
    }
    write(data.data(), data.size());
    pos += data.size();
    const uint64_t pad = (pos + kAlign - 1) / kAlign * kAlign - pos;
    static const uint8_t zeros[kAlign] = {};
    write(zeros, pad);
    pos += pad;
    if (opt.progress && d.name.find(".ffn_down.") != std::string::npos) opt.progress("gguf " + d.name);
  }
  NBITS_CHECK(std::fflush(f.get()) == 0, "gguf: cannot write '", path, "'");
  return static_cast<int64_t>(h.bytes.size() + pos);
}

}  // namespace nbits::modelgen
