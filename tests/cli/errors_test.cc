// User errors reach the user as one clear line and a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli_util.h"
#include "onnx/malformed_corpus.h"
#include "onnx/onnx_test_util.h"

namespace nbits::testing {
namespace {

std::string stories(const std::string& rel) { return shared_path("models/stories260K/" + rel); }

#ifdef NBITS_ARCH_X86
constexpr bool kX86 = true;
#else
constexpr bool kX86 = false;
#endif

void expect_one_line(const RunResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find(needle), std::string::npos) << lines[0];
}

TEST(CliErrors, PromptLongerThanContext) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  std::string ids = "1";
  for (int i = 0; i < 600; ++i) ids += ",300";
  expect_one_line(run_nbits({"run", "-m", stories("onnx_int4"), "--ids", ids, "-t", "1"}), 1,
                  "prompt of 601 tokens does not fit the context of 512");
  expect_one_line(
      run_nbits({"run", "-m", stories("onnx_int4"), "--ids", "1,2,3,4,5", "--ctx", "4", "-t", "1"}), 1,
      "prompt of 5 tokens does not fit the context of 4");
  // A generation that reaches the end of the context stops there, without an error.
  RunResult r = run_nbits({"run", "-m", stories("onnx_int4"), "--ids", "1,403,407", "--ctx", "8", "-n", "50",
                           "--format", "json", "-t", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"ids\":[261,378,432,383,286,261]"), std::string::npos) << r.out;
}

// NBITS_ISA names a level this CPU runs, or the run stops with the levels it has.
TEST(CliErrors, UnknownOrUnavailableIsaLevel) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  const std::vector<std::string> args = {"run", "-m", stories("onnx_int4"), "--ids", "1", "-n", "2",
                                         "-t",  "1"};
  struct Case {
    const char* level;
    const char* needle;
  };
  const bool x86 = kX86;
  for (const Case& c : {Case{"avx9", "NBITS_ISA=avx9 is not a kernel level (this CPU has: ref"},
                        Case{x86 ? "i8mm" : "avx2", "this CPU cannot run that level (it has: ref"}}) {
    ::setenv("NBITS_ISA", c.level, 1);
    const RunResult r = run_nbits(args);
    ::unsetenv("NBITS_ISA");
    SCOPED_TRACE(c.level);
    expect_one_line(r, 1, c.needle);
  }
  ::setenv("NBITS_ISA", "ref", 1);
  const RunResult ok = run_nbits(args);
  ::unsetenv("NBITS_ISA");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(CliErrors, BadFlagsExitTwoWithAMessage) {
  NBITS_REQUIRE_BIN();
  const std::string m = stories("onnx_int4");
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"run", "-m", m, "--bogus"}, "unknown flag '--bogus'"},
      {{"run", "-m", m, "-n", "abc"}, "-n needs an integer (got 'abc')"},
      {{"run", "-m", m, "--top-p", "2"}, "--top-p must be in"},
      {{"run", "-m", m, "--temp", "-1"}, "--temp must be >= 0"},
      {{"run", "-m", m, "--ids", "1,x"}, "--ids needs a comma-separated list of integers"},
      {{"run", "-m", m, "--format", "xml"}, "--format must be one of text|json"},
      {{"run", "-m", m, "-p", "a", "--ids", "1"}, "give -p or --ids, not both"},
      {{"run", "-p", "hello"}, "missing required flag --model"},
      {{"run", "-m"}, "-m needs a value"},
      {{"run", "-m", m, "stray"}, "unexpected argument 'stray'"},
      {{"run", "-m", m, "--accuracy-level", "5"}, "--accuracy-level must be in [0, 4]"},
      {{"chat", "-m", m, "--chat-format", "nope"}, "--chat-format must be one of"},
      {{"inspect"}, "missing argument FILE_OR_DIR"},
      {{"inspect", m, "--format=yaml"}, "--format must be one of"},
      // bench, make-model and roofline parse with the same Flags.
      {{"bench", "-m", m, "--bogus"}, "nbits bench: unknown flag '--bogus'"},
      {{"bench", "-m"}, "-m needs a value"},
      {{"bench", "-m", m, "-p", "abc"}, "-p needs an integer (got 'abc')"},
      {{"bench", "-m", m, "-t", "1,x"}, "-t needs a comma-separated list of integers"},
      {{"bench", "-m", m, "--bandwidth-gbs", "fast"}, "--bandwidth-gbs needs a number"},
      {{"make-model", "--arch", "custom", "--bogus"}, "nbits make-model: unknown flag '--bogus'"},
      {{"make-model", "--arch"}, "--arch needs a value"},
      {{"make-model", "--arch", "custom", "--hidden", "6x"}, "--hidden needs an integer (got '6x')"},
      {{"make-model", "--arch", "custom", "--rms-eps", "e"}, "--rms-eps needs a number (got 'e')"},
      {{"make-model", "--arch", "custom", "--asym=1"}, "--asym takes no value"},
      {{"roofline", "stray"}, "nbits roofline: unexpected argument 'stray'"},
      {{"roofline", "--size-mb"}, "--size-mb needs a value"},
      {{"roofline", "--reps", "many"}, "--reps needs an integer (got 'many')"},
  };
  for (const auto& c : cases) {
    std::string trace;
    for (const auto& a : c.args) trace.append(a).push_back(' ');
    SCOPED_TRACE(trace);
    expect_one_line(run_nbits(c.args), 2, c.needle);
  }
}

TEST(CliErrors, MissingModelAndTokenIds) {
  NBITS_REQUIRE_BIN();
  expect_one_line(run_nbits({"run", "-m", "/nonexistent/model_dir", "--ids", "1"}), 1,
                  "nbits run: error: model '/nonexistent/model_dir' does not exist");
  expect_one_line(run_nbits({"inspect", "/nonexistent/model.onnx"}), 1,
                  "'/nonexistent/model.onnx' does not exist");
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  expect_one_line(run_nbits({"run", "-m", stories("onnx_int4"), "--ids", "1,512", "-t", "1"}), 1,
                  "token id 512 is out of range");
  TempDir empty;
  expect_one_line(run_nbits({"run", "-m", empty.path(), "--ids", "1"}), 1,
                  "no genai_config.json (onnxruntime-genai) or config.json (Hugging Face Optimum) in");
}

TEST(CliErrors, MalformedModelsFailWithOneLine) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  TempDir dir;
  const auto cases = write_malformed_corpus(dir.path(), shared_path("models/stories260K"));
  ASSERT_GT(cases.size(), 10u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string folder = c.model_path.substr(0, c.model_path.rfind('/'));
    RunResult r = run_nbits({"run", "-m", folder, "--ids", "1", "-n", "2", "-t", "1"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind("nbits run: error: ", 0), 0u) << lines[0];
  }
}

TEST(CliErrors, EverySubcommandHasHelp) {
  NBITS_REQUIRE_BIN();
  for (const char* cmd : {"run", "chat", "inspect", "patch", "bench", "make-model", "roofline"}) {
    SCOPED_TRACE(cmd);
    RunResult r = run_nbits({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind(std::string("usage: nbits ") + cmd, 0), 0u) << r.out;
  }
  RunResult r = run_nbits({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"run", "chat", "inspect"})
    EXPECT_NE(r.out.find(std::string("  ") + cmd + " "), std::string::npos);
}

}  // namespace
}  // namespace nbits::testing
