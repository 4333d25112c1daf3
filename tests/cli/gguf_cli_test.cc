// `nbits run|chat|inspect|tokenize -m FILE.gguf` on the real SmolLM2 Q4_1 GGUF ($NBITS_SMOLLM2_GGUF, made by
// tools/setup_models.sh): text in, text out through the GGUF's own tokenizer.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli_util.h"
#include "gguf/gguf_test_data.h"
#include "support/shared_data.h"

namespace nbits::testing {
namespace {

std::string smollm2_gguf() {
  if (const char* p = std::getenv("NBITS_SMOLLM2_GGUF"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/nbits/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST(CliGguf, RunGeneratesTextFromTheGgufTokenizer) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  const RunResult r = run_nbits({"run", "-m", smollm2_gguf(), "-p", "The capital of France is", "-n", "4",
                                 "--temp", "0", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_ids"], (std::vector<int>{504, 3575, 282, 4649, 314}));
  EXPECT_EQ(j["ids"][0], 7042);  // " Paris", as llama.cpp
  EXPECT_EQ(j["text"].get<std::string>().rfind(" Paris", 0), 0u) << j["text"];
}

// run --chat: -p is one user message rendered through the GGUF's chat template (ChatML here, with
// SmolLM2's default system message unless --system gives one); only the answer is printed. A raw
// question that ends at once on an instruct model gets a note pointing at --chat.
TEST(CliGguf, RunChatRendersTheTemplate) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  const std::string q = "What is the capital of France?";
  const RunResult raw = run_nbits({"run", "-m", smollm2_gguf(), "-p", q, "-n", "8", "--temp", "0"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.err.find("add --chat"), std::string::npos) << raw.err;
  const RunResult c = run_nbits(
      {"run", "-m", smollm2_gguf(), "--chat", "-p", q, "-n", "8", "--temp", "0", "--format", "json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  const auto ids = j["prompt_ids"].get<std::vector<int>>();
  const RunResult t = run_nbits({"tokenize", "-m", smollm2_gguf(), "--text", q});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // <|im_start|>system\n ... <|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n
  ASSERT_GE(ids.size(), 12u);
  EXPECT_EQ(std::vector<int>(ids.begin(), ids.begin() + 3), (std::vector<int>{1, 9690, 198}));
  EXPECT_EQ(std::vector<int>(ids.end() - 4, ids.end()), (std::vector<int>{1, 520, 9531, 198}));
  std::string joined;
  for (int id : ids) joined += std::to_string(id) + ",";
  EXPECT_NE(joined.find("1,4093,198," + t.out.substr(0, t.out.size() - 1) + ",2,198,"), std::string::npos)
      << joined;
  EXPECT_FALSE(j["ids"].empty());
  EXPECT_NE(j["ids"][0], 2) << "the answer is not an immediate <|im_end|>";
  const RunResult sys = run_nbits({"run", "-m", smollm2_gguf(), "--chat", "--system", "Be brief.", "-p", q,
                                   "-n", "1", "--format", "json"});
  ASSERT_EQ(sys.exit_code, 0) << sys.err;
  EXPECT_LT(nlohmann::json::parse(sys.out)["prompt_ids"].size(), ids.size())
      << "--system replaces the default";
  const RunResult bad = run_nbits({"run", "-m", smollm2_gguf(), "--system", "x", "-p", q});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("go with --chat"), std::string::npos) << bad.err;
}

// tokenize/detokenize take the GGUF's own vocabulary (llama.cpp's ids: it keeps "\n\n  " whole
// before a digit where the HF tokenizer.json splits off a space).
TEST(CliGguf, TokenizeAndDetokenizeUseTheGgufVocabulary) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  const RunResult r = run_nbits({"tokenize", "-m", smollm2_gguf(), "--text", "The capital of France is"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "504,3575,282,4649,314\n");
  const RunResult d = run_nbits({"detokenize", "-m", smollm2_gguf(), "--ids", "504,3575,282,4649,314"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, "The capital of France is\n");
}

TEST(CliGguf, InspectShowsArchAndKernels) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  const RunResult r = run_nbits({"inspect", smollm2_gguf(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gguf"]["arch"], "llama");
  EXPECT_EQ(j["gguf"]["tensor_types"]["Q4_1"], 210);
  EXPECT_EQ(j["gguf"]["hyperparameters"]["layers"], 30);
  EXPECT_EQ(j["matmul_nbits"].size(), 151u);  // 30 x (qkv, o, gate, up, down) + lm_head
  EXPECT_TRUE(j["session"]["loads"].get<bool>());
  // Every quantized type is reported with its bits per weight in the file and as held.
  EXPECT_EQ(j["gguf"]["storage"]["Q4_1"]["file_bits_per_weight"], 5.0);
  EXPECT_EQ(j["gguf"]["storage"]["Q4_1"]["nbits_bits_per_weight"], 6.125);  // + fp32 min, zero points
}

// Where an architecture departs from llama's layer, inspect says how (lfm2's convolution layers,
// smollm3's NoPE period, olmo2's norms).
TEST(CliGguf, InspectShowsConvolutionNoPEAndNormLayouts) {
  NBITS_REQUIRE_BIN();
  for (const char* a : {"lfm2", "smollm3", "olmo2"}) NBITS_REQUIRE_SHARED(nbits::gguf::test::tiny_model(a));
  const auto hyper = [](const char* arch) {
    const RunResult r = run_nbits({"inspect", nbits::gguf::test::tiny_model(arch), "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["gguf"]["hyperparameters"];
  };
  const auto lfm2 = hyper("lfm2");
  EXPECT_EQ(lfm2["conv_layers"], nlohmann::json::array({0, 1, 3}));
  EXPECT_EQ(lfm2["conv_taps"], 3);
  EXPECT_EQ(hyper("smollm3")["no_rope_every"], 4);
  EXPECT_EQ(hyper("olmo2")["norms"], "after attention and FFN only");
}

// Sliding windows, rope scaling and mistral3's attention temperature in nbits inspect.
TEST(CliGguf, InspectShowsWindowsAndRopeScaling) {
  NBITS_REQUIRE_BIN();
  for (const char* a : {"gemma3", "llama3", "mistral3"})
    NBITS_REQUIRE_SHARED(nbits::gguf::test::tiny_model(a));
  const auto hyper = [](const char* arch) {
    const RunResult r = run_nbits({"inspect", nbits::gguf::test::tiny_model(arch), "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["gguf"]["hyperparameters"];
  };
  const auto gemma3 = hyper("gemma3");
  EXPECT_EQ(gemma3["sliding_window"], 8);
  EXPECT_EQ(gemma3["sliding_window_period"], 6);
  EXPECT_EQ(gemma3["rope_scaling"]["type"], "linear");
  EXPECT_EQ(hyper("llama3")["rope_scaling"]["frequency_factors"], "rope_freqs.weight (Llama 3)");
  EXPECT_EQ(hyper("stablelm")["norms"], "LayerNorm with biases");
  const auto m3 = hyper("mistral3");
  EXPECT_EQ(m3["rope_scaling"]["type"], "yarn");
  EXPECT_EQ(m3["rope_scaling"]["original_context"], 8);
  EXPECT_EQ(m3["attention_temperature"]["floor"], 8);
  // The text form shows them too.
  const RunResult t = run_nbits({"inspect", nbits::gguf::test::tiny_model("mistral3")});
  EXPECT_NE(t.out.find("rope_scaling="), std::string::npos) << t.out;
}

// nbits bench on a GGUF: the file's own bytes per token and their floor beside nbits'. SmolLM2's
// output is tied: every matrix of the file streams per token, the Q8_0 table as the lm_head.
TEST(CliGguf, BenchReportsTheFilesBytesPerToken) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  const RunResult r = run_nbits({"bench", "-m", smollm2_gguf(), "-t", "1", "-p", "4", "-n", "2", "--reps",
                                 "1", "--bandwidth-gbs", "10", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The kernel sets a host build (NBITS_X86_KERNELS=host: the ASan build's) left out, by name.
  std::istringstream left_out(j.at("kernel_sets_left_out").get<std::string>());
  for (std::string set; left_out >> set;)
    EXPECT_TRUE(set == "avx512" || set == "avx512vnni" || set == "avxvnni" || set == "amx") << set;
  const auto run = j["runs"][0];
  const double file = run["file_weight_bytes_per_token"].get<double>();
  // 30 layers of 576 x (576 + 192 + 192 + 576) + 3 x 576 x 1536 weights in Q4_1 (20 bytes per 32), and
  // the tied 49152 x 576 table in Q8_0 (34 per 32).
  EXPECT_EQ(file, 30.0 * 576 * (576 + 192 + 192 + 576 + 3 * 1536) * 20 / 32 + 49152.0 * 576 * 34 / 32);
  EXPECT_NEAR(run["file_floor_ms"].get<double>(),
              (file + run["kv_bytes_per_token"].get<double>()) / 10e9 * 1e3, 1e-6);
  EXPECT_GT(run["weight_bytes_per_token"].get<double>(), file);  // nbits holds Q4_1 with fp32 mins
}

// Load progress goes to a terminal only: under `script` (a pty) the load prints "loading NAME: N%"
// and "done in"; through a pipe nothing (NBITS_PROGRESS_AFTER_MS=0: from the first node on).
TEST(CliGguf, LoadProgressOnATerminalOnly) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(smollm2_gguf());
  NBITS_REQUIRE_SHARED(std::string("/usr/bin/script"));
  const std::string cmd = "NBITS_PROGRESS_AFTER_MS=0 /usr/bin/script -qec \"'" + nbits_bin() + "' run -m '" +
                          smollm2_gguf() + "' -p hi -n 1 -t 1\" /dev/null 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("loading SmolLM2-135M-Instruct.Q4_1.gguf: 0%"), std::string::npos) << out;
  EXPECT_NE(out.find("loading SmolLM2-135M-Instruct.Q4_1.gguf: done in "), std::string::npos) << out;
  setenv("NBITS_PROGRESS_AFTER_MS", "0", 1);
  const RunResult piped = run_nbits({"run", "-m", smollm2_gguf(), "-p", "hi", "-n", "1", "-t", "1"});
  unsetenv("NBITS_PROGRESS_AFTER_MS");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("loading "), std::string::npos) << piped.err;
}

TEST(CliGguf, NonGgufBytesRefusedWithOneLine) {
  NBITS_REQUIRE_BIN();
  const std::string path = std::filesystem::temp_directory_path().string() + "/nbits_not_really.gguf";
  {
    std::ofstream f(path);
    f << "GGML this is not a gguf file";
  }
  const RunResult r = run_nbits({"run", "-m", path, "--ids", "1", "-n", "1"});
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err_lines()[0],
            "nbits run: error: " + path + ": not a GGUF file (the first 4 bytes are not 'GGUF')");
}

}  // namespace
}  // namespace nbits::testing
