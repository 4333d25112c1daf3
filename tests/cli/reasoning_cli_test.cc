// `nbits run --chat` and `nbits chat` print a reply's reasoning apart from its answer (stderr and
// stdout): stories260K behind a template whose generation prompt opens <think>, so the whole reply
// is reasoning, and behind one that leaves it closed, so the whole reply is the answer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_util.h"

namespace nbits::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string stories() { return shared_path("models/stories260K/onnx_int4"); }

// A copy of stories260K's folder (links) with this chat template.
fs::path with_template(const std::string& name, const std::string& tmpl) {
  const fs::path dir = fs::temp_directory_path() / ("nbits_cli_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"genai_config.json", "model.onnx", "tokenizer.json"}) {
    std::error_code ec;
    fs::remove(dir / f, ec);
    fs::create_symlink(fs::path(stories()) / f, dir / f);
  }
  json cfg = json::parse(slurp_text(stories() + "/tokenizer_config.json"));
  cfg["chat_template"] = tmpl;
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  return dir;
}

const char* kTurns =
    "{{ bos_token }}{% for m in messages %}<{{ m.role }}> {{ m.content }}</think>\n{% endfor %}";

TEST(CliReasoning, ThinkingGoesToStderrAndTheAnswerToStdout) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories() + "/model.onnx");
  const fs::path open = with_template("think_open", std::string(kTurns) + "<assistant> <think>\n");
  const fs::path closed = with_template("think_closed", std::string(kTurns) + "<assistant> ");
  const std::vector<std::string> common = {"-p", "Once upon a time", "--chat", "-n", "16", "-t", "1"};
  auto run = [&](const fs::path& dir, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "-m", dir.string()};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_nbits(args);
  };
  // The reply's text (the same greedy ids either way: the split is only in the printing).
  const json j = run_json({"run", "-m", open.string(), "-p", "Once upon a time", "--chat", "-n", "16", "-t",
                           "1", "--format", "json"});
  const std::string text = j.value("text", "");
  ASSERT_FALSE(text.empty()) << j.dump();
  ASSERT_EQ(text.find("</think>"), std::string::npos) << text;
  // Inside <think> to the end: all reasoning.
  RunResult r = run(open, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "\n");
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  r = run(open, {"--hide-reasoning"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "\n");
  EXPECT_EQ(r.err.find(text), std::string::npos) << r.err;
  // Not opened: all answer, nothing on stderr but the timings.
  r = run(closed, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(r.out.size(), 1u);
  EXPECT_EQ(r.err.find(r.out.substr(0, r.out.size() - 1)), std::string::npos) << r.err;
  // nbits chat: the same split, each turn.
  r = run_nbits({"chat", "-m", open.string(), "-n", "16", "-t", "1"}, "Once upon a time\nThe end\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "\n\n");
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  fs::remove_all(open);
  fs::remove_all(closed);
}

}  // namespace
}  // namespace nbits::testing
