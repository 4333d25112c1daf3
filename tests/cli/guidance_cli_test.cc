// Constrained output from the CLI: `nbits run|chat --json-schema FILE | --json | --regex R |
// --grammar FILE.lark` on the real SmolLM2 Q4_1 GGUF ($NBITS_SMOLLM2_GGUF): every reply matches,
// and a bad spec or two constraints at once are refused in one line before anything runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "support/shared_data.h"
#include "support/text_shape.h"

namespace nbits::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string smollm2_gguf() {
  if (const char* p = std::getenv("NBITS_SMOLLM2_GGUF"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/nbits/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / (name + std::to_string(::getpid()));
  std::ofstream(p) << text;
  return p.string();
}

// A build without the engine (no cargo) refuses every constraint: fail in CI, skip elsewhere.
#define REQUIRE_ENGINE()                                                                              \
  do {                                                                                                \
    const RunResult probe = run_nbits({"run", "-m", smollm2_gguf(), "-p", "x", "-n", "1", "--json"}); \
    if (probe.err.find("not in this build") != std::string::npos) {                                   \
      if (in_ci()) FAIL() << probe.err;                                                               \
      GTEST_SKIP() << probe.err;                                                                      \
    }                                                                                                 \
  } while (0)

const char* kSchema = R"({"type": "object", "properties": {
  "color": {"enum": ["red", "green", "blue"]}, "shade": {"type": "integer", "minimum": 1, "maximum": 9}},
  "required": ["color", "shade"], "additionalProperties": false})";

TEST(CliGuidance, RunRepliesMatchTheSpec) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  REQUIRE_ENGINE();
  const std::string m = smollm2_gguf();
  const std::string schema = write_temp("nbits_schema_", kSchema);
  for (const std::vector<std::string>& spec : {std::vector<std::string>{"--json-schema", schema},
                                               std::vector<std::string>{"--json-schema", kSchema}}) {
    std::vector<std::string> args = {"run",           "-m", m,    "--chat",   "-p",
                                     "Pick a color.", "-n", "60", "--format", "json"};
    args.insert(args.end(), spec.begin(), spec.end());
    const RunResult r = run_nbits(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(json::parse(r.out)["text"].get<std::string>());
    EXPECT_EQ(j.size(), 2u);
    EXPECT_TRUE(j["color"] == "red" || j["color"] == "green" || j["color"] == "blue") << j;
    EXPECT_TRUE(j["shade"].is_number_integer()) << j;
  }
  const RunResult any = run_nbits({"run", "-m", m, "--chat", "-p", "Give me a JSON object about a cat.", "-n",
                                   "120", "--json", "--temp", "0", "--format", "json"});
  ASSERT_EQ(any.exit_code, 0) << any.err;
  const json a = json::parse(any.out);
  if (a["ids"].back() == 2) {  // ended (<|im_end|>) within the limit: a whole object
    EXPECT_TRUE(json::parse(a["text"].get<std::string>()).is_object()) << a["text"];
  }
  const RunResult re = run_nbits({"run", "-m", m, "--chat", "-p", "When is the meeting?", "-n", "20",
                                  "--regex", "[0-2][0-9]:[0-5][0-9] (am|pm)", "--format", "json"});
  ASSERT_EQ(re.exit_code, 0) << re.err;
  const std::string when = json::parse(re.out)["text"];
  EXPECT_TRUE(has_any_shape(when, {"99:99 am", "99:99 pm"}) && when[0] <= '2' && when[3] <= '5') << re.out;
  const std::string lark = write_temp("nbits_lark_", "start: \"Answer: \" (\"yes\" | \"no\")\n");
  const RunResult g = run_nbits(
      {"run", "-m", m, "--chat", "-p", "Is water wet?", "-n", "10", "--grammar", lark, "--format", "json"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const std::string gt = json::parse(g.out)["text"];
  EXPECT_TRUE(gt == "Answer: yes" || gt == "Answer: no") << gt;
  fs::remove(schema);
  fs::remove(lark);
}

TEST(CliGuidance, ChatRepliesEachMatch) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  REQUIRE_ENGINE();
  const RunResult r =
      run_nbits({"chat", "-m", smollm2_gguf(), "--json-schema", kSchema, "--temp", "0", "-n", "60"},
                "Pick a color.\nAnother one.\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two replies, one JSON object each, one per line block.
  std::vector<json> replies;
  size_t pos = 0;
  while ((pos = r.out.find('{', pos)) != std::string::npos) {
    const size_t end = r.out.find('}', pos);
    ASSERT_NE(end, std::string::npos) << r.out;
    replies.push_back(json::parse(r.out.substr(pos, end - pos + 1)));
    pos = end + 1;
  }
  ASSERT_EQ(replies.size(), 2u) << r.out;
  for (const json& j : replies) EXPECT_TRUE(j.contains("color") && j.contains("shade")) << j;
}

TEST(CliGuidance, BadSpecsAreOneLineErrors) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  REQUIRE_ENGINE();
  const std::string m = smollm2_gguf();
  auto refused = [&](const std::vector<std::string>& extra, const std::string& words) {
    std::vector<std::string> args = {"run", "-m", m, "-p", "x", "-n", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_nbits(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  };
  refused({"--json-schema", R"({"type": "objec"})"}, "invalid json_schema");
  refused({"--json-schema", "/no/such/schema.json"}, "/no/such/schema.json");
  refused({"--regex", "(a"}, "invalid regex");
  refused({"--json", "--regex", "a"}, "two constraints");
}

// The tokens a spec forces run in verify steps (fast-forward), and --spec combines with a spec:
// the ids are plain constrained decoding's (--logprobs scores each step alone, so it decodes
// plainly: the reference).
TEST(CliGuidance, ForcedTokensAndSpeculationGivePlainConstrainedIds) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  REQUIRE_ENGINE();
  const std::string m = smollm2_gguf();
  const std::string lark = write_temp(
      "nbits_lark_", "start: \"The answer is: \" (\"yes\" | \"no\") \", because \" /[a-z ]+/ \".\"\n");
  for (const std::vector<std::string>& spec :
       {std::vector<std::string>{"--json-schema", kSchema}, std::vector<std::string>{"--grammar", lark}}) {
    auto ids = [&](const std::vector<std::string>& extra, json* out = nullptr) {
      std::vector<std::string> args = {
          "run", "-m", m,        "--chat", "-p",       "Pick a color and say why.",
          "-n",  "40", "--temp", "0",      "--format", "json"};
      args.insert(args.end(), spec.begin(), spec.end());
      args.insert(args.end(), extra.begin(), extra.end());
      const RunResult r = run_nbits(args);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      const json j = json::parse(r.out, nullptr, false);
      if (out) *out = j;
      return j.is_object() ? j["ids"] : json();
    };
    json fast;
    const json want = ids({"--logprobs", "1"});
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(ids({}, &fast), want) << spec[0];
    EXPECT_EQ(ids({"--spec", "lookup"}), want) << spec[0];
    EXPECT_EQ(ids({"--draft-model", m, "--draft-max", "4"}), want) << spec[0];
    if (spec[0] == "--grammar") {  // "The answer is: " is forced text
      EXPECT_GT(fast["speculative"]["forced_kept"].get<int>(), 2) << fast;
    }
  }
  fs::remove(lark);
}

}  // namespace
}  // namespace nbits::testing
