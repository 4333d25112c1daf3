// The tokens that end a reply (gguf::end_of_generation_ids), as llama.cpp takes them: the metadata's
// eos / eot / eom ids and the known end-of-turn markers by text; in gpt-oss's harmony vocabulary
// <|end|> is not one (the analysis message ends with it and the final answer follows) while
// <|return|> and <|call|> are.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/vocab.h"
#include "gguf_bytes.h"

namespace nbits::gguf {
namespace {

// A GGUF with only a vocabulary (and an eos id when eos >= 0).
std::vector<uint8_t> vocab_gguf(const std::vector<std::string>& tokens, int eos) {
  test::GgufBytes g;
  g.b.reserve(4096);            // (GCC 12 warns falsely about the first inserts' growth otherwise)
  g.put<uint32_t>(0x46554747);  // "GGUF"
  g.put<uint32_t>(3);
  g.put<uint64_t>(0);
  g.put<uint64_t>(eos >= 0 ? 2 : 1);
  g.key("tokenizer.ggml.tokens", 9);
  g.put<uint32_t>(8);
  g.put<uint64_t>(tokens.size());
  for (const std::string& t : tokens) g.str(t);
  if (eos >= 0) {
    g.key("tokenizer.ggml.eos_token_id", 4);
    g.put<uint32_t>(static_cast<uint32_t>(eos));
  }
  return g.b;
}

TEST(EndOfGeneration, HarmonyEndsAtReturnAndCallNotEnd) {
  // o200k_harmony's special tokens (ids shifted): eos is <|return|> in gpt-oss files.
  const std::vector<std::string> harmony = {"a",        "<|start|>",  "<|end|>",     "<|message|>",
                                            "<|call|>", "<|return|>", "<|channel|>", "<|endoftext|>"};
  const File f = File::parse(vocab_gguf(harmony, 5), "harmony.gguf");
  EXPECT_EQ(end_of_generation_ids(f), (std::vector<int64_t>{5, 4, 7}));
}

TEST(EndOfGeneration, MetadataIdsFirstThenMarkersByText) {
  // ChatML (Qwen, SmolLM2): eos <|im_end|>, and <|endoftext|> by text; Phi-3's <|end|> stays one
  // without <|return|> / <|call|>.
  const File chatml =
      File::parse(vocab_gguf({"<|endoftext|>", "<|im_start|>", "<|im_end|>", "x"}, 2), "c.gguf");
  EXPECT_EQ(end_of_generation_ids(chatml), (std::vector<int64_t>{2, 0}));
  const File phi = File::parse(vocab_gguf({"<s>", "</s>", "<|end|>", "<|user|>"}, 1), "p.gguf");
  EXPECT_EQ(end_of_generation_ids(phi), (std::vector<int64_t>{1, 2}));
  const File none = File::parse(vocab_gguf({"a", "b"}, -1), "n.gguf");
  EXPECT_TRUE(end_of_generation_ids(none).empty());
}

}  // namespace
}  // namespace nbits::gguf
