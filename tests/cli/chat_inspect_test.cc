// `nbits chat` through a pipe and `nbits inspect` on stories260K.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_util.h"
#include "onnx/writer.h"

namespace nbits::testing {
namespace {

using nlohmann::json;

std::string stories(const std::string& rel) { return shared_path("models/stories260K/" + rel); }

// Token count of TEXT as the model's tokenizer encodes it (no BOS unless asked).
size_t token_count(const std::string& text, bool bos) {
  std::vector<std::string> args = {
      "run", "-m", stories("onnx_int4"), "-p", text, "-n", "0", "--format", "json", "-t", "1"};
  if (!bos) args.push_back("--no-bos");
  RunResult r = run_nbits(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out).at("prompt_ids").size();
}

std::vector<long> prefilled_counts(const std::string& err) {
  std::vector<long> counts;
  for (size_t pos = 0; (pos = err.find("[prefilled ", pos)) != std::string::npos; ++pos)
    counts.push_back(std::stol(err.substr(pos + 11)));
  return counts;
}

TEST(CliChat, SecondTurnPrefillsOnlyTheNewTokens) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  RunResult r = run_nbits({"chat", "-m", stories("onnx_int4"), "-n", "12", "-t", "1"},
                          "Once upon a time\nThe end\n/reset\nOnce upon a time\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto counts = prefilled_counts(r.err);
  ASSERT_EQ(counts.size(), 3u) << r.err;
  const auto first = static_cast<long>(token_count("Once upon a time", true));
  EXPECT_EQ(first, 5);
  EXPECT_EQ(counts[0], first);
  // Turn two: the last reply token (sampled, not yet run) plus the new text only.
  EXPECT_EQ(counts[1], 1 + static_cast<long>(token_count("The end", false)));
  EXPECT_EQ(counts[2], first);  // after /reset, from scratch
  EXPECT_NE(r.err.find("[reset]"), std::string::npos);
  // Three replies, one per line; the first and the one after /reset are the same greedy text,
  // and equal `nbits run` from the same prompt.
  std::vector<std::string> lines;
  for (size_t s = 0, e; (e = r.out.find('\n', s)) != std::string::npos; s = e + 1)
    lines.push_back(r.out.substr(s, e - s));
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], lines[2]);
  RunResult run =
      run_nbits({"run", "-m", stories("onnx_int4"), "-p", "Once upon a time", "-n", "12", "-t", "1"});
  EXPECT_EQ(run.out, "Once upon a time" + lines[0] + "\n");
}

TEST(CliChat, TemplateFormatPrefillsIncrementally) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  RunResult r = run_nbits({"chat", "-m", stories("onnx_int4"), "-n", "4", "-t", "1", "--chat-format",
                           "chatml", "--system", "Be brief."},
                          "Hi\nMore\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto counts = prefilled_counts(r.err);
  ASSERT_EQ(counts.size(), 2u) << r.err;
  // Turn two costs its own text, not the conversation so far.
  const auto whole_second = static_cast<long>(token_count(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
      false));
  EXPECT_GT(counts[0], 0);
  EXPECT_LT(counts[1], counts[0] + whole_second);
  EXPECT_EQ(counts[0], whole_second);
}

// The load-time kernel choice (kernels/kernel_choice.h) as inspect shows it: each choice names a
// candidate, the decode kernels are chosen ones; where the CPU has several int8 sets, the first
// run measures and writes the cache file, and the second takes the file and measures nothing.
TEST(CliInspect, ShowsTheKernelChoiceAndItsCacheFile) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("nbits_inspect_choice_" + std::to_string(::getpid()) + ".tsv"))
                               .string();
  std::filesystem::remove(file);
  const char* outer = std::getenv("NBITS_KERNEL_CHOICE_FILE");  // ctest's: the build folder's file
  const std::string outer_file = outer != nullptr ? outer : "";
  ::setenv("NBITS_KERNEL_CHOICE_FILE", file.c_str(), 1);
  const json first = run_json({"inspect", stories("onnx_int4"), "--format", "json"});
  const json second = run_json({"inspect", stories("onnx_int4"), "--format", "json"});
  if (outer != nullptr)
    ::setenv("NBITS_KERNEL_CHOICE_FILE", outer_file.c_str(), 1);
  else
    ::unsetenv("NBITS_KERNEL_CHOICE_FILE");
  std::set<std::string> chosen;
  for (const json* j : {&first, &second})
    for (const auto& c : j->at("session").at("kernel_choice")) {
      bool named = false;
      for (const auto& k : c.at("candidates")) named = named || k.at("name") == c.at("chosen");
      EXPECT_TRUE(named) << c.dump();
      chosen.insert(c.at("chosen").get<std::string>());
    }
  const json& choices = first.at("session").at("kernel_choice");
  if (choices.empty()) {  // one kernel set can run these weights on this CPU: nothing to choose
    EXPECT_FALSE(std::filesystem::exists(file));
    return;
  }
  for (const auto& row : first.at("matmul_nbits"))
    EXPECT_TRUE(chosen.count(row.at("kernel").get<std::string>()) > 0 ||
                chosen.count(row.at("prefill_kernel").get<std::string>()) > 0)
        << row.dump();
  EXPECT_EQ(choices[0].at("why"), "measured");
  for (const auto& k : choices[0].at("candidates")) EXPECT_GT(k.at("us").get<double>(), 0.0);
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_EQ(second.at("session").at("kernel_choice").size(), choices.size());
  for (const auto& c : second.at("session").at("kernel_choice"))
    EXPECT_EQ(c.at("why"), "cache file " + file) << c.dump();
  std::filesystem::remove(file);
}

TEST(CliInspect, ReportsKernelsAndAccuracyLevelWarnings) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4_acc0/model.onnx"));
  auto inspect = [](const std::string& variant) {
    RunResult r = run_nbits({"inspect", stories(variant), "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  };
  const json acc0 = inspect("onnx_int4_acc0");
  const json acc4 = inspect("onnx_int4");
  EXPECT_EQ(acc0.at("ops").at("com.microsoft:MatMulNBits").get<int>(), 26);
  EXPECT_EQ(acc4.at("session").at("kv_dtype"), "float");
  EXPECT_EQ(acc4.at("session").at("kv_cache_q8"), true);  // GroupQueryAttention owns the cache
  ASSERT_EQ(acc0.at("matmul_nbits").size(), 26u);
  ASSERT_EQ(acc4.at("matmul_nbits").size(), 26u);
  for (size_t i = 0; i < 26; ++i) {
    const json& a = acc0["matmul_nbits"][i];
    const json& b = acc4["matmul_nbits"][i];
    EXPECT_EQ(a["accuracy_level"], 0);
    EXPECT_EQ(b["accuracy_level"], 4);
    EXPECT_EQ(a["bits"], 4);
    EXPECT_EQ(a["block_size"], 32);
    EXPECT_FALSE(a["kernel"].get<std::string>().empty());
    EXPECT_NE(a["kernel"], b["kernel"]);  // fp32 dequantize vs int8 activations
    // The kernel of a multi-row (prefill) run: the GEMM beside the GEMV of one row.
    EXPECT_FALSE(b["prefill_kernel"].get<std::string>().empty());
    // Packed size, from the session: 4-bit codes plus a scale per 32 (and panel padding), on any
    // kernel set; not the 32 of fp32 or the 8 of widened codes.
    EXPECT_GT(b["packed_bits_per_weight"].get<double>(), 4.0);
    EXPECT_LT(b["packed_bits_per_weight"].get<double>(), 6.5);
  }
  EXPECT_EQ(acc0["matmul_nbits"][0]["K"], 64);
  EXPECT_EQ(acc0["matmul_nbits"][0]["N"], 256);
  auto has_warning = [](const json& j, const std::string& needle) {
    for (const auto& w : j["warnings"])
      if (w.get<std::string>().find(needle) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has_warning(acc0, "26 MatMulNBits node(s) have accuracy_level 0"));
  EXPECT_TRUE(has_warning(acc0, "nbits patch IN OUT --accuracy-level 4"));
  EXPECT_FALSE(has_warning(acc4, "accuracy_level"));
  EXPECT_EQ(acc0["inputs"][0]["name"], "input_ids");
  EXPECT_EQ(acc0["inputs"][0]["dtype"], "int64");
  // The text form carries the same table and warning.
  RunResult t = run_nbits({"inspect", stories("onnx_int4_acc0/model.onnx")});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("MatMulNBits (26; bits/w: as packed"), std::string::npos);
  EXPECT_NE(t.out.find("will dequantize to fp32"), std::string::npos);
}

}  // namespace
}  // namespace nbits::testing

namespace nbits::testing {
namespace {

// A graph with two op types the runtime lacks (one used twice) and a node name
// holding control and invalid UTF-8 bytes: inspect lists every unsupported op
// type with its count, prints the name escaped, and JSON stays valid.
TEST(CliInspect, ListsEveryUnsupportedOpAndEscapesNames) {
  NBITS_REQUIRE_BIN();
  namespace o = nbits::onnx;
  o::ModelWriter w;
  w.add_opset("", 21);
  w.add_opset("com.acme", 1);
  w.add_input("x", o::DataType::kFloat, {o::dim_value(4)});
  w.add_node("FooOp", "", "foo1", {"x"}, {"a"});
  w.add_node("FooOp", "", std::string("bad\x01\xff", 5), {"a"}, {"b"});
  w.add_node("Bar", "com.acme", "bar", {"b"}, {"y"});
  w.add_output("y", o::DataType::kFloat, {o::dim_value(4)});
  const std::string path = std::filesystem::temp_directory_path().string() + "/nbits_inspect_unsupported_" +
                           std::to_string(::getpid()) + ".onnx";
  w.save(path, false);
  RunResult t = run_nbits({"inspect", path});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("cannot run (2 op types):"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("ai.onnx:FooOp"), std::string::npos);
  EXPECT_NE(t.out.find("com.acme:Bar"), std::string::npos);
  EXPECT_NE(t.out.find("2 node(s), first 'foo1'"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find('\x01'), std::string::npos) << "raw control byte reached the terminal";
  EXPECT_EQ(t.out.find('\xff'), std::string::npos) << "raw invalid byte reached the terminal";
  RunResult j = run_nbits({"inspect", path, "--format", "json"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  const json r = json::parse(j.out);
  ASSERT_EQ(r["cannot_run"].size(), 2u);
  EXPECT_EQ(r["layout"]["attention"], "none");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace nbits::testing
