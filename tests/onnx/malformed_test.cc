// Every malformed model must be refused with nbits::Error: one line that names the
// file; never a crash, never another exception type (this suite also runs under ASan/UBSan).
#include <gtest/gtest.h>

#include <exception>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "onnx/malformed_corpus.h"
#include "onnx/model.h"
#include "onnx/patch.h"
#include "onnx_test_util.h"
#include "support/shared_data.h"

namespace nbits::onnx {
namespace {

using nbits::testing::TempDir;

std::string stories_dir() { return nbits::testing::shared_path("models/stories260K"); }

// The error message of f(), or a description of what went wrong instead.
template <typename F>
std::string error_of(F&& f, bool& ok) {
  ok = false;
  try {
    f();
    return "no error";
  } catch (const Error& e) {
    ok = true;
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
}

void expect_one_line(const std::string& msg, const std::string& must_contain, const std::string& name) {
  EXPECT_FALSE(msg.empty()) << name;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << name << ": " << msg;
  EXPECT_EQ(msg.find('\r'), std::string::npos) << name << ": " << msg;
  EXPECT_NE(msg.find(must_contain), std::string::npos)
      << name << ": '" << msg << "' does not name " << must_contain;
}

// The corpus is written once for the suite.
class OnnxMalformed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    cases_ = new std::vector<nbits::testing::MalformedCase>(
        nbits::testing::write_malformed_corpus(dir_->path(), stories_dir()));
  }
  static void TearDownTestSuite() {
    delete cases_;
    delete dir_;
  }
  static TempDir* dir_;
  static std::vector<nbits::testing::MalformedCase>* cases_;
};
TempDir* OnnxMalformed::dir_ = nullptr;
std::vector<nbits::testing::MalformedCase>* OnnxMalformed::cases_ = nullptr;

TEST_F(OnnxMalformed, EveryCaseIsRefusedWithOneLine) {
  const auto& cases = *cases_;
  EXPECT_GE(cases.size(), 40u);
  std::set<std::string> names;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
    bool ok = false;
    const std::string msg = error_of([&] { load_model(c.model_path); }, ok);
    EXPECT_TRUE(ok) << c.name << ": " << msg;
    expect_one_line(msg, c.model_path, c.name);
    // The same bytes from memory (external data refused there anyway).
    const auto bytes = nbits::testing::read_bytes(c.model_path);
    const std::string mem = error_of([&] { parse_model(bytes); }, ok);
    EXPECT_TRUE(ok) << c.name << " (memory): " << mem;
    expect_one_line(mem, "model", c.name + " (memory)");
  }
}

TEST_F(OnnxMalformed, CorpusUsesTheStoriesModelsInCI) {
  NBITS_REQUIRE_SHARED(stories_dir() + "/onnx_int4_extdata/model.onnx.data");
  const auto& cases = *cases_;
  int derived = 0;
  for (const auto& c : cases) derived += c.name.rfind("truncate", 0) == 0 || c.name.rfind("stories", 0) == 0;
  EXPECT_GE(derived, 15);
  EXPECT_GE(cases.size(), 60u);
  // The CLI reaches the model: the exports' side files are next to every case.
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(cases[0].model_path).parent_path() /
                                      "genai_config.json"));
}

TEST_F(OnnxMalformed, PatchRefusesTheCorpusToo) {
  TempDir out;
  const auto& cases = *cases_;
  for (const auto& c : cases) {
    bool ok = false;
    const std::string msg = error_of([&] { patch_model_file(c.model_path, out.file("p.onnx"), 4); }, ok);
    EXPECT_TRUE(ok) << c.name << ": " << msg;
    expect_one_line(msg, c.name, c.name);
  }
}

TEST_F(OnnxMalformed, MessagesSayWhatIsWrong) {
  const auto& cases = *cases_;
  const std::pair<const char*, const char*> expected[] = {
      {"empty_file", "empty file"},
      {"raw_length_huge", "past the end"},
      {"raw_size_short", "raw_data has 255 bytes, expected uint8 [8,2,16] (256 bytes)"},
      {"dims_overflow", "overflow"},
      {"data_type_unknown", "unknown data_type 99"},
      {"group_wire_type", "groups"},
      {"varint_too_long", "varint"},
      {"ext_offset_past_end",
       "tensor 'E' external data offset 400000 + length 64 is past the end of model.onnx.data (4096 bytes)"},
      {"ext_length_mismatch", "does not match float [4,4] (64 bytes)"},
      {"ext_location_dotdot", "inside the model's directory"},
      {"ext_location_absolute", "inside the model's directory"},
      {"ext_location_empty", "external data location ''"},
      {"ext_missing_data_file", "No such file"},
      {"duplicate_initializer", "duplicate initializer 'S'"},
  };
  for (const auto& [name, text] : expected) {
    const auto it = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c.name == name; });
    ASSERT_NE(it, cases.end()) << name;
    bool ok = false;
    const std::string msg = error_of([&] { load_model(it->model_path); }, ok);
    EXPECT_NE(msg.find(text), std::string::npos) << name << ": " << msg;
  }
}

}  // namespace
}  // namespace nbits::onnx
