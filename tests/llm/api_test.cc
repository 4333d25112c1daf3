#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "nbits/nbits.h"
#include "support/shared_data.h"

namespace nbits {
namespace {

std::string stories(const std::string& rel) { return testing::shared_path("models/stories260K/" + rel); }

TEST(PublicApi, GeneratesAndContinuesTheConversation) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  ModelOptions mo;
  mo.threads = 1;
  auto model = Model::load(stories("onnx_fp32"), mo);
  EXPECT_EQ(model->context_length(), 512);
  GenerationOptions go;
  go.max_new_tokens = 20;
  Generator gen(*model, go);
  std::string streamed;
  auto r = gen.generate("", [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(r.prompt_ids, std::vector<int32_t>{1});
  ASSERT_EQ(r.ids.size(), 20u);
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.text.rfind("Once upon a time", 0), 0u) << r.text;
  EXPECT_EQ(model->decode(r.ids), r.text);
  const int64_t before = gen.length();
  auto r2 = gen.generate(" The end");
  // Only the pending reply token and the new text are prefilled; no BOS in the middle.
  EXPECT_EQ(r2.prompt_ids.size(), 1 + model->encode(" The end", false).size());
  EXPECT_EQ(r2.prompt_ids[0], r.ids.back());
  EXPECT_EQ(gen.length(), before + static_cast<int64_t>(r2.prompt_ids.size()) + 19);
  gen.reset();
  EXPECT_EQ(gen.length(), 0);
  EXPECT_EQ(gen.generate("").ids, r.ids);  // greedy: the same story again
  EXPECT_THROW(Model::load(stories("no_such_variant")), Error);
}

}  // namespace
}  // namespace nbits
