// `nbits serve` end to end: the real binary on a free port with stories260K (greedy), driven by
// cpp-httplib's client. Response shapes, SSE framing, equality with `nbits run`, concurrency,
// errors, and a client that leaves mid-stream.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_util.h"
#include "support/shared_data.h"

namespace nbits::testing {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const char* kKey = "test-key";
const int64_t kCtx = 256;

std::string model_dir() { return shared_path("models/stories260K/onnx_int4"); }

// stories260K has no chat template: a copy of its folder (links) with a small one.
std::string chat_model_dir() {
  const fs::path dir = fs::temp_directory_path() / ("nbits_serve_model_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"genai_config.json", "model.onnx", "tokenizer.json"}) {
    std::error_code ec;
    fs::remove(dir / f, ec);
    fs::create_symlink(fs::path(model_dir()) / f, dir / f);
  }
  json cfg = json::parse(slurp_text(model_dir() + "/tokenizer_config.json"));
  cfg["chat_template"] =
      "{{ bos_token }}{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}\n{% endfor %}"
      "{% if add_generation_prompt %}<assistant> {% endif %}";
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  return dir.string();
}

struct ServerProcess {
  pid_t pid = -1;
  int port = 0;
  std::string dir, log;
};
ServerProcess g_server;

bool start_server() {
  g_server.dir = chat_model_dir();
  int out[2];
  if (pipe(out) != 0) return false;
  const std::string bin = nbits_bin();
  const std::vector<std::string> args = {
      bin,          "serve", "-m",    g_server.dir,         "--port",  "0", "-t",        "1",
      "--parallel", "2",     "--ctx", std::to_string(kCtx), "--queue", "4", "--api-key", kKey};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  g_server.pid = pid;
  FILE* f = fdopen(out[0], "r");
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    g_server.log += line;
    const std::string l = line;
    if (auto p = l.find("http://127.0.0.1:"); p != std::string::npos && g_server.port == 0)
      g_server.port = std::stoi(l.substr(p + 17));
    if (l.find("ready:") != std::string::npos) break;
  }
  // Keep draining stdout so the server never blocks on it.
  std::thread([f] {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) {
    }
    std::fclose(f);
  }).detach();
  return g_server.port > 0;
}

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string bin = nbits_bin();
    if (file_exists(model_dir() + "/model.onnx") && !bin.empty() && fs::exists(bin)) start_server();
  }
  static void TearDownTestSuite() {
    if (g_server.pid > 0) {
      kill(g_server.pid, SIGTERM);
      int status = 0;
      waitpid(g_server.pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "nbits serve did not exit cleanly";
      g_server.pid = -1;
    }
    std::error_code ec;
    if (!g_server.dir.empty()) fs::remove_all(g_server.dir, ec);
  }
  void SetUp() override {
    NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
    NBITS_REQUIRE_BIN();
    ASSERT_GT(g_server.port, 0) << "nbits serve did not start:\n" << g_server.log;
  }

  static httplib::Client client() {
    httplib::Client c("127.0.0.1", g_server.port);
    c.set_read_timeout(60, 0);
    c.set_bearer_token_auth(kKey);
    return c;
  }
  static httplib::Result post(const std::string& path, const json& body) {
    return client().Post(path.c_str(), body.dump(), "application/json");
  }

  struct Stream {
    int status = 0;
    std::string content_type;
    std::vector<std::string> events;  // each "data: X" payload X, in order
    std::string raw;
  };
  // POSTs with stream: true; stop_after > 0 cancels (closes) after that many bytes.
  static Stream stream(const std::string& path, const json& body, size_t stop_after = 0) {
    httplib::Client c = client();
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.set_header("Authorization", std::string("Bearer ") + kKey);
    Stream s;
    req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
      s.raw.append(d, n);
      return stop_after == 0 || s.raw.size() < stop_after;
    };
    auto r = c.send(req);
    if (r) {
      s.status = r->status;
      s.content_type = r->get_header_value("Content-Type");
    }
    size_t pos = 0;
    while (pos < s.raw.size()) {
      const size_t end = s.raw.find("\n\n", pos);
      if (end == std::string::npos) break;
      const std::string ev = s.raw.substr(pos, end - pos);
      pos = end + 2;
      if (ev.rfind(": ", 0) == 0) continue;  // a comment (keep-alive)
      EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
      s.events.push_back(ev.substr(6));
    }
    EXPECT_TRUE(stop_after > 0 || pos == s.raw.size()) << "trailing bytes: " << s.raw.substr(pos);
    return s;
  }

  // Checks the SSE shape and returns the concatenated text.
  static std::string check_stream(const Stream& s, bool chat, bool usage, std::string* finish = nullptr) {
    EXPECT_EQ(s.status, 200);
    EXPECT_EQ(s.content_type, "text/event-stream");
    EXPECT_GE(s.events.size(), 3u);
    if (s.events.size() < 3) return "";
    EXPECT_EQ(s.events.back(), "[DONE]");
    std::string text, id;
    bool seen_finish = false;
    const size_t n = s.events.size() - 1 - (usage ? 1 : 0);
    for (size_t i = 0; i < n; ++i) {
      const json c = json::parse(s.events[i]);
      EXPECT_EQ(c["object"], chat ? "chat.completion.chunk" : "text_completion");
      if (i == 0) id = c["id"];
      EXPECT_EQ(c["id"], id);
      EXPECT_EQ(c.contains("usage"), usage) << s.events[i];
      if (usage) {
        EXPECT_TRUE(c["usage"].is_null());
      }
      const json& ch = c["choices"][0];
      EXPECT_FALSE(seen_finish) << "a chunk after finish_reason";
      if (!ch["finish_reason"].is_null()) {
        seen_finish = true;
        if (finish) *finish = ch["finish_reason"];
      }
      if (chat) {
        if (i == 0) {
          EXPECT_EQ(ch["delta"]["role"], "assistant");
        } else {
          EXPECT_FALSE(ch["delta"].contains("role"));
        }
        if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
      } else {
        text += ch["text"].get<std::string>();
      }
    }
    EXPECT_TRUE(seen_finish);
    if (usage) {
      const json u = json::parse(s.events[s.events.size() - 2]);
      EXPECT_TRUE(u["choices"].empty());
      EXPECT_GT(u["usage"]["completion_tokens"].get<int>(), 0);
      EXPECT_EQ(u["usage"]["total_tokens"].get<int>(),
                u["usage"]["prompt_tokens"].get<int>() + u["usage"]["completion_tokens"].get<int>());
    }
    return text;
  }
};

TEST_F(Serve, HealthModelsTokenize) {
  auto h = httplib::Client("127.0.0.1", g_server.port).Get("/health");  // no key needed
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  const json models = json::parse(m->body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(models["data"][0]["context_length"], kCtx);
  auto t = post("/tokenize", {{"content", "Once upon a time"}, {"add_special", true}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  const json ids = json::parse(t->body)["tokens"];
  EXPECT_EQ(ids, json::parse("[1,403,407,261,378]"));
  auto d = post("/detokenize", {{"tokens", ids}});
  ASSERT_TRUE(d);
  ASSERT_EQ(d->status, 200) << d->body;
  EXPECT_EQ(json::parse(d->body)["content"], "Once upon a time");
  auto metrics = client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("nbits_slots 2"), std::string::npos) << metrics->body;
}

TEST_F(Serve, CompletionEqualsNbitsRun) {
  const RunResult run =
      run_nbits({"run", "-m", model_dir(), "-p", "Once upon a time", "-n", "40", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json want = json::parse(run.out);
  auto r = post("/v1/completions", {{"model", fs::path(g_server.dir).filename().string()},
                                    {"prompt", "Once upon a time"},
                                    {"max_tokens", 40},
                                    {"temperature", 0},
                                    {"return_token_ids", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json got = json::parse(r->body);
  EXPECT_EQ(got["object"], "text_completion");
  EXPECT_EQ(got["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(got["prompt_token_ids"], want["prompt_ids"]);
  EXPECT_EQ(got["choices"][0]["token_ids"], want["ids"]);
  EXPECT_EQ(got["choices"][0]["text"], want["text"]);
  EXPECT_EQ(got["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(got["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(got["usage"]["completion_tokens"], 40);
  EXPECT_EQ(got["usage"]["total_tokens"], 45);

  // Streamed: the same text, chunk by chunk; no usage chunk unless asked.
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}};
  std::string finish;
  EXPECT_EQ(check_stream(stream("/v1/completions", body), false, false, &finish), want["text"]);
  EXPECT_EQ(finish, "length");
  json with_usage = body;
  with_usage["stream_options"] = {{"include_usage", true}};
  const Stream s = stream("/v1/completions", with_usage);
  EXPECT_EQ(check_stream(s, false, true), want["text"]);
  const json u = json::parse(s.events[s.events.size() - 2])["usage"];
  EXPECT_EQ(u["completion_tokens"], 40);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 4);  // a slot held this prompt
}

TEST_F(Serve, StopStringsAreNotEmitted) {
  auto r = post("/v1/completions", {{"prompt", "Once upon a time"},
                                    {"max_tokens", 40},
                                    {"temperature", 0},
                                    {"stop", json::array({"Timmy", "zzz"})}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json got = json::parse(r->body);
  EXPECT_EQ(got["choices"][0]["text"], ", there was a boy named ");
  EXPECT_EQ(got["choices"][0]["finish_reason"], "stop");
  const Stream s = stream("/v1/completions", {{"prompt", "Once upon a time"},
                                              {"max_tokens", 40},
                                              {"temperature", 0},
                                              {"stop", "Timmy"},
                                              {"stream", true}});
  std::string finish;
  EXPECT_EQ(check_stream(s, false, false, &finish), ", there was a boy named ");
  EXPECT_EQ(finish, "stop");
}

TEST_F(Serve, ChatStreamAndMultiTurnReuse) {
  const json msgs = json::array({{{"role", "system"}, {"content", "Tell a story."}},
                                 {{"role", "user"}, {"content", "Once upon a time"}}});
  auto r =
      post("/v1/chat/completions", {{"messages", msgs}, {"max_completion_tokens", 30}, {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json got = json::parse(r->body);
  EXPECT_EQ(got["object"], "chat.completion");
  EXPECT_EQ(got["choices"][0]["message"]["role"], "assistant");
  const std::string answer = got["choices"][0]["message"]["content"];
  EXPECT_FALSE(answer.empty());
  EXPECT_EQ(got["usage"]["completion_tokens"], 30);

  const Stream s = stream("/v1/chat/completions",
                          {{"messages", msgs}, {"max_tokens", 30}, {"temperature", 0}, {"stream", true}});
  EXPECT_EQ(check_stream(s, true, false), answer);

  // The second turn: most of its prompt is already in a slot.
  json turn2 = msgs;
  turn2.push_back({{"role", "assistant"}, {"content", answer}});
  turn2.push_back({{"role", "user"}, {"content", "And then?"}});
  auto r2 = post("/v1/chat/completions", {{"messages", turn2}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const json u = json::parse(r2->body)["usage"];
  EXPECT_GT(u["prompt_tokens_details"]["cached_tokens"].get<int>(), u["prompt_tokens"].get<int>() / 2) << u;
}

TEST_F(Serve, ConcurrentStreamsEqualTheirSoloOutput) {
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog"};
  auto body = [](const std::string& p) {
    return json{{"prompt", p}, {"max_tokens", 120}, {"temperature", 0}, {"stream", true}};
  };
  std::vector<std::string> solo;
  for (const auto& p : prompts)
    solo.push_back(check_stream(stream("/v1/completions", body(p)), false, false));
  for (int round = 0; round < 3; ++round) {
    std::vector<Stream> got(prompts.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < prompts.size(); ++i)
      threads.emplace_back([&, i] { got[i] = stream("/v1/completions", body(prompts[i])); });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(check_stream(got[i], false, false), solo[i]);
  }
}

TEST_F(Serve, Errors) {
  auto expect_error = [](const httplib::Result& r, int status, const std::string& param = "") {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object()) << r->body;
    ASSERT_TRUE(e.contains("error")) << r->body;
    EXPECT_TRUE(e["error"]["message"].is_string());
    EXPECT_TRUE(e["error"]["type"].is_string());
    EXPECT_TRUE(e["error"].contains("code"));
    if (!param.empty()) {
      EXPECT_EQ(e["error"]["param"], param);
    }
  };
  expect_error(client().Post("/v1/chat/completions", "{\"messages\": [", "application/json"), 400);
  expect_error(client().Post("/v1/completions", "\"\xff\xfe\"", "application/json"), 400);
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"temperature", "hot"}}), 400, "temperature");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", -3}}), 400, "max_tokens");
  expect_error(post("/v1/completions", {{"prompt", 42}}), 400, "prompt");
  expect_error(post("/v1/chat/completions", {{"messages", "hi"}}), 400, "messages");
  expect_error(
      post("/v1/chat/completions", {{"messages", json::array({{{"role", "robot"}, {"content", "x"}}})}}), 400,
      "messages[0].role");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"n", 2}}), 400, "n");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"stop", json::array({1})}}), 400, "stop");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"model", "gpt-9"}}), 404, "model");
  expect_error(post("/v1/completions", {{"prompt", std::vector<int>(kCtx + 1, 300)}}), 413, "prompt");
  expect_error(post("/v1/completions", {{"prompt", std::vector<int>{1, 99999}}}), 400, "prompt");
  expect_error(client().Get("/v1/no/such/route"), 404);
  httplib::Client wrong("127.0.0.1", g_server.port);
  wrong.set_bearer_token_auth("nope");
  expect_error(wrong.Post("/v1/completions", R"({"prompt":"x"})", "application/json"), 401);
  expect_error(httplib::Client("127.0.0.1", g_server.port).Get("/v1/models"), 401);
  expect_error(client().Post("/v1/completions", std::string(9u << 20, ' '), "application/json"), 413);
  // Still serving.
  auto ok = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(Serve, DisconnectFreesTheSlot) {
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", kCtx}, {"temperature", 0}, {"stream", true}};
  for (int i = 0; i < 4; ++i) {
    const Stream s = stream("/v1/completions", body, /*stop_after=*/100);  // cancelled: no status
    EXPECT_GE(s.raw.size(), 100u);
  }
  // Both slots are free again: two requests at once get served promptly.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::vector<int> status(2, 0);
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] {
      auto r = post("/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 8}, {"temperature", 0}});
      status[static_cast<size_t>(i)] = r ? r->status : -1;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(status, (std::vector<int>{200, 200}));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // A cancelled generation notices within a token or two: the slots are idle again soon.
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    auto m = client().Get("/metrics");
    ASSERT_TRUE(m);
    metrics = m->body;
    if (metrics.find("nbits_slots_busy 0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(metrics.find("nbits_slots_busy 0"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace nbits::testing
