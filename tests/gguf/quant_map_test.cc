#include "gguf/quant_map.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "gguf/gguf_bytes.h"
#include "gguf/gguf_test_data.h"

namespace nbits::gguf {
namespace {

// Every mapped type, F16 and BF16 dequantize bit for bit like gguf-py's
// gguf.quants.dequantize (the python port of ggml's) on random blocks; Q1_0, which gguf-py does
// not dequantize, like ggml's definition written in numpy (tools/gguf/make_quant_refs.py). The
// IQ lattice types need a build configured with gguf-py (cmake/room_gguf.cmake), as CI's is.
TEST(GgufQuantMap, DequantizationEqualsGgufPy) {
  const std::string path = test::quant_refs_path();
  NBITS_REQUIRE_SHARED(path);
  const File f = File::open(path);
  int checked = 0;
  const char* const types[] = {"Q4_0",    "Q4_1",  "Q5_0",  "Q5_1",   "Q8_0",    "Q2_K",   "Q3_K",
                               "Q4_K",    "Q5_K",  "Q6_K",  "IQ4_NL", "IQ4_XS",  "TQ1_0",  "TQ2_0",
                               "MXFP4",   "NVFP4", "IQ1_S", "IQ1_M",  "IQ2_XXS", "IQ2_XS", "IQ2_S",
                               "IQ3_XXS", "IQ3_S", "Q1_0",  "F16",    "BF16"};
  for (const char* type : types) {
    SCOPED_TRACE(type);
    const TensorInfo* q = f.tensor(type);
    const TensorInfo* ref = f.tensor(std::string(type) + ".ref");
    ASSERT_TRUE(q != nullptr && ref != nullptr);
    EXPECT_STREQ(type_name(q->type), type);
    const std::vector<float> got = to_float(f, *q);
    ASSERT_EQ(got.size() * 4, ref->bytes.size());
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      float r;
      std::memcpy(&r, ref->bytes.data() + 4 * i, 4);
      differ += got[i] != r;
    }
    EXPECT_EQ(differ, 0) << "of " << got.size();
    if (maps_to_nbits(q->type)) {
      // The MatMulNBits form holds exactly these values.
      const NBitsMatrix m = to_nbits(f, *q);
      EXPECT_EQ(m.K, q->ne[0]);
      EXPECT_EQ(m.N, q->ne[1]);
      EXPECT_EQ(static_cast<int64_t>(m.codes.size()), m.N * m.k_blocks() * m.blob_bytes());
      int64_t value_differ = 0;
      for (int64_t n = 0; n < m.N; ++n)
        for (int64_t k = 0; k < m.K; ++k)
          value_differ += m.value(n, k) != got[static_cast<size_t>(n * m.K + k)];
      EXPECT_EQ(value_differ, 0);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 26);
}

TEST(GgufQuantMap, Q4_0NibbleOrderAndQ8_0Codes) {
  // One Q4_0 block with d = 1: qs[j] holds element j (low) and j + 16 (high).
  std::vector<uint8_t> blk(18);
  blk[0] = 0x00, blk[1] = 0x3c;  // fp16 1.0
  for (int j = 0; j < 16; ++j) blk[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  test::GgufBytes g = test::small_gguf();
  File f = File::parse(g.b, "t.gguf");
  TensorInfo t;
  t.name = "w";
  t.type = GgmlType::kQ4_0;
  t.n_dims = 2;
  t.ne[0] = 32;
  t.ne[1] = 1;
  t.bytes = blk;
  const NBitsMatrix m = to_nbits(f, t);
  ASSERT_EQ(m.bits, 4);
  EXPECT_TRUE(m.zero_points.empty());  // the implicit 8
  for (int k = 0; k < 32; ++k) EXPECT_EQ(m.value(0, k), k < 16 ? k - 8 : (15 - (k - 16)) - 8) << k;
  // MatMulNBits byte j: element 2j low, 2j + 1 high.
  EXPECT_EQ(m.codes[0], 0 | (1 << 4));
  EXPECT_EQ(m.codes[8], 15 | (14 << 4));  // elements 16, 17

  const TensorInfo* b = f.tensor("b");  // Q8_0, d = 1, q = i - 16
  const NBitsMatrix q8 = to_nbits(f, *b);
  EXPECT_EQ(q8.bits, 8);
  EXPECT_EQ(q8.codes[0], 128 - 16);
  EXPECT_EQ(q8.value(0, 31), 15.0f);
}

TEST(GgufQuantMap, OtherTypesRefusedByName) {
  test::GgufBytes g = test::small_gguf();
  File f = File::parse(g.b, "t.gguf");
  TensorInfo t = *f.tensor("a");
  t.type = GgmlType::kQ8_K;  // ggml's activation type: no weight file holds it
  try {
    to_nbits(f, t);
    FAIL() << "accepted Q8_K";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "t.gguf: tensor 'a' has type Q8_K, which nbits cannot run as a quantized matmul (Q4_0, Q4_1, "
        "Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, "
        "IQ2_S, IQ4_XS, IQ1_M, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0)");
  }
  t.type = GgmlType::kQ8_1;
  EXPECT_THROW(to_float(f, t), Error);
}

}  // namespace
}  // namespace nbits::gguf
