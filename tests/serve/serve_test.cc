// `nbits serve` end to end: the real binary on a free port with stories260K (greedy), driven by
// cpp-httplib's client. Response shapes, SSE framing, equality with `nbits run`, concurrency,
// errors, and a client that leaves mid-stream.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/cli_util.h"
#include "support/shared_data.h"
#include "support/source_dir.h"

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

// Starts `nbits serve -m dir --port 0 extra...` and waits for its "ready" line.
bool start_server(ServerProcess& server, const std::string& dir, const std::vector<std::string>& extra) {
  server.dir = dir;
  int out[2];
  if (pipe(out) != 0) return false;
  const std::string bin = nbits_bin();
  std::vector<std::string> args = {bin, "serve", "-m", dir, "--port", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
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
  server.pid = pid;
  FILE* f = fdopen(out[0], "r");
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    server.log += line;
    const std::string l = line;
    if (auto p = l.find("http://127.0.0.1:"); p != std::string::npos && server.port == 0)
      server.port = std::stoi(l.substr(p + 17));
    if (l.find("ready:") != std::string::npos) break;
  }
  // Keep draining stdout so the server never blocks on it.
  std::thread([f] {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) {
    }
    std::fclose(f);
  }).detach();
  return server.port > 0;
}

bool start_server() {
  return start_server(g_server, chat_model_dir(),
                      {"-t", "1", "--parallel", "2", "--ctx", std::to_string(kCtx), "--queue", "4",
                       "--api-key", kKey, "--cors", "http://app.example"});
}

// Runs a shell command: its exit status (-1 when it could not start) and its output.
std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return {pclose(p), out};
}

// SIGTERM, then the exit status (-1: did not exit within `wait`).
int stop_server(ServerProcess& server, std::chrono::milliseconds wait = std::chrono::seconds(60)) {
  if (server.pid <= 0) return -1;
  kill(server.pid, SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(server.pid, &status, WNOHANG);
    if (r == server.pid) break;
    if (std::chrono::steady_clock::now() - t0 > wait) {
      kill(server.pid, SIGKILL);
      waitpid(server.pid, &status, 0);
      server.pid = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

// The official OpenAI Node client (tests/serve/node: npm `openai`, pinned): models, completions and
// chat, streamed and not, include_usage, the second turn's cached_tokens, an aborted stream, and the
// typed errors (401, 400, 404). The completion must be `nbits run`'s greedy text.
TEST_F(Serve, OfficialOpenAINodeClient) {
  const std::string node_dir = std::string(nbits::testing::source_dir()) + "/tests/serve/node";
  if (!fs::exists(node_dir + "/node_modules/openai/package.json")) {
    if (in_ci()) FAIL() << "missing " << node_dir << "/node_modules/openai (npm ci in tests/serve/node)";
    GTEST_SKIP() << "missing " << node_dir << "/node_modules/openai (cd tests/serve/node && npm ci)";
  }
  const RunResult run =
      run_nbits({"run", "-m", model_dir(), "-p", "Once upon a time", "-n", "40", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path want =
      fs::temp_directory_path() / ("nbits_openai_want_" + std::to_string(::getpid()) + ".json");
  std::ofstream(want) << json{{"prompt", "Once upon a time"},
                              {"max_tokens", 40},
                              {"text", json::parse(run.out)["text"]}}
                             .dump();
  const std::string cmd = "cd '" + node_dir + "' && node openai_client.mjs " + std::to_string(g_server.port) +
                          " " + kKey + " '" + want.string() + "' 2>&1";
  const auto [status, out] = shell(cmd);
  fs::remove(want);
  ASSERT_EQ(status, 0) << out;
  const json got = json::parse(out.substr(out.find('{')));
  EXPECT_TRUE(got["failures"].empty()) << got["failures"].dump(1);
  EXPECT_GE(got["checks"].size(), 20u) << out;
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
  // Another model's name is served by the loaded model (clients configured for another server);
  // the reply names the real one. --strict-model-name: ServeFlags.StrictModelNameAnswers404.
  {
    auto other = post("/v1/completions", {{"prompt", "x"}, {"model", "gpt-9"}, {"max_tokens", 1}});
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 200) << other->body;
    EXPECT_NE(json::parse(other->body)["model"], "gpt-9");
  }
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

// response_format json_schema / json_object (OpenAI's shapes): the reply parses and follows the
// schema whatever the model (stories260K tells stories), streamed and not; a schema that does not
// compile is a 400 naming response_format, and the server goes on serving.
TEST_F(Serve, ResponseFormatConstrainsTheReply) {
  const json schema = {{"type", "object"},
                       {"properties",
                        {{"mood", {{"enum", json::array({"happy", "sad"})}}},
                         {"count", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}},
                         {"done", {{"type", "boolean"}}}}},
                       {"required", json::array({"mood", "count", "done"})},
                       {"additionalProperties", false}};
  const json msgs = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  auto check = [&](const std::string& text) {
    SCOPED_TRACE(text);
    const json j = json::parse(text, nullptr, false);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.size(), 3u);
    EXPECT_TRUE(j["mood"] == "happy" || j["mood"] == "sad");
    ASSERT_TRUE(j["count"].is_number_integer());
    EXPECT_GE(j["count"].get<int>(), 1);
    EXPECT_LE(j["count"].get<int>(), 9);
    EXPECT_TRUE(j["done"].is_boolean());
  };
  for (double temp : {0.0, 1.0}) {
    const json body = {
        {"messages", msgs},
        {"max_tokens", 80},
        {"temperature", temp},
        {"seed", 3},
        {"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "m"}, {"strict", true}, {"schema", schema}}}}}};
    auto r = post("/v1/chat/completions", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json got = json::parse(r->body);
    EXPECT_EQ(got["choices"][0]["finish_reason"], "stop") << r->body;
    check(got["choices"][0]["message"]["content"]);
    json sb = body;
    sb["stream"] = true;
    std::string finish;
    check(check_stream(stream("/v1/chat/completions", sb), true, false, &finish));
    EXPECT_EQ(finish, "stop");
  }
  // The properties come in the order the body gives them (nlohmann::json, used above, sorts keys).
  {
    const std::string raw =
        R"({"prompt": "Once upon a time", "max_tokens": 80, "temperature": 0, "response_format": {"type":
        "json_schema", "json_schema": {"name": "m", "schema": {"type": "object", "properties": {"mood": {"enum":
        ["happy", "sad"]}, "count": {"type": "integer", "minimum": 1, "maximum": 9}, "done": {"type": "boolean"}},
        "required": ["mood", "count", "done"], "additionalProperties": false}}}})";
    auto r = client().Post("/v1/completions", raw, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string text = json::parse(r->body)["choices"][0]["text"];
    check(text);
    EXPECT_LT(text.find("\"mood\""), text.find("\"count\"")) << text;
    EXPECT_LT(text.find("\"count\""), text.find("\"done\"")) << text;
  }
  // json_object with llama-server's "schema" beside it; /v1/completions takes it too.
  auto c = post("/v1/completions", {{"prompt", "Once upon a time"},
                                    {"max_tokens", 80},
                                    {"temperature", 0},
                                    {"response_format", {{"type", "json_object"}, {"schema", schema}}}});
  ASSERT_TRUE(c);
  ASSERT_EQ(c->status, 200) << c->body;
  check(json::parse(c->body)["choices"][0]["text"]);
  // Refusals.
  auto refused = [&](const json& rf, const std::string& code) {
    auto r = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 4}, {"response_format", rf}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["code"], code) << r->body;
    EXPECT_EQ(e["param"].get<std::string>().rfind("response_format", 0), 0u) << r->body;
  };
  refused({{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "objec"}}}}}},
          "invalid_schema");
  refused({{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"$ref", "#/nowhere"}}}}}},
          "invalid_schema");
  refused({{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}, "invalid_value");
  refused({{"type", "yaml"}}, "invalid_value");
  refused("json", "invalid_value");
  // Hostile schemas: refused (or served) at once, and the server goes on serving.
  for (const char* hostile :
       {R"({"$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"})",
        R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", R"({"$ref": "http://example.com/s.json"})",
        R"({"type": "string", "pattern": "(?<=a)b"})"})
    refused({{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", json::parse(hostile)}}}},
            "invalid_schema");
  {
    // 5000 levels of nesting: nlohmann::ordered_json would take ~40 s over it (base/json_depth.h).
    std::string deep = R"({"type": "string"})";
    for (int i = 0; i < 5000; ++i) {
      std::string next = R"({"type": "object", "properties": {"a": )";
      next += deep;
      next += "}}";
      deep = std::move(next);
    }
    std::string raw = R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "response_format":
        {"type": "json_schema", "json_schema": {"name": "d", "schema": )";
    raw += deep;
    raw += "}}}";
    const auto t0 = std::chrono::steady_clock::now();
    auto r = client().Post("/v1/chat/completions", raw, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body.substr(0, 300);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  }
  {
    json big = json::array();
    char name[16];
    for (int i = 0; i < 20000; ++i) {
      std::snprintf(name, sizeof name, "v%d", i);
      big.push_back(name);
    }
    auto r =
        post("/v1/completions",
             {{"prompt", "x"},
              {"max_tokens", 8},
              {"temperature", 0},
              {"response_format",
               {{"type", "json_schema"}, {"json_schema", {{"name", "e"}, {"schema", {{"enum", big}}}}}}}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    const json v = json::parse(json::parse(r->body)["choices"][0]["text"].get<std::string>());
    EXPECT_EQ(v.get<std::string>()[0], 'v');
  }
  auto ok =
      post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}, {"response_format", {{"type", "text"}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
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

TEST_F(Serve, Cors) {
  httplib::Client c("127.0.0.1", g_server.port);
  // A preflight carries no credentials: answered without the API key.
  auto pre =
      c.Options("/v1/chat/completions", {{"Origin", "http://app.example"},
                                         {"Access-Control-Request-Method", "POST"},
                                         {"Access-Control-Request-Headers", "authorization,content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  const std::string allow = pre->get_header_value("Access-Control-Allow-Headers");
  EXPECT_NE(allow.find("Authorization"), std::string::npos) << allow;
  EXPECT_NE(allow.find("Content-Type"), std::string::npos) << allow;
  // Every response names the origin, errors included.
  auto h = c.Get("/health", {{"Origin", "http://app.example"}});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
  auto denied = c.Get("/v1/models", {{"Origin", "http://app.example"}});
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_EQ(json::parse(denied->body)["error"]["code"], "invalid_api_key");
}

TEST(ServeFlags, CorsTakesOneOrigin) {
  NBITS_REQUIRE_BIN();
  for (const char* bad : {"http://a.example, http://b.example", "http://a.example\r\nX-Evil: 1", ""}) {
    const RunResult r = run_nbits({"serve", "-m", model_dir(), "--port", "0", "--cors", bad});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--cors"), std::string::npos) << r.err;
  }
}

// A server started by a test itself, stopped (SIGTERM, exit 0 expected) when it goes.
// The real SmolLM2-135M-Instruct Q4_1 (tools/setup_models.sh; NBITS_SMOLLM2_GGUF overrides).
std::string smollm2_gguf() {
  const char* env = std::getenv("NBITS_SMOLLM2_GGUF");
  const char* home = std::getenv("HOME");
  return env && *env
             ? env
             : std::string(home ? home : "") + "/.cache/nbits/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

struct OwnServer {
  ServerProcess p;
  OwnServer(const std::string& dir, const std::vector<std::string>& extra) { start_server(p, dir, extra); }
  ~OwnServer() {
    if (p.pid > 0) {
      EXPECT_EQ(stop_server(p), 0) << "nbits serve did not exit cleanly";
    }
  }
};

TEST(ServeFlags, StrictModelNameAnswers404) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1", "--strict-model-name", "--model-id", "stories"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  auto r = c.Post("/v1/completions", R"({"prompt":"x","model":"gpt-9","max_tokens":1})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["error"]["message"],
            "the model 'gpt-9' does not exist (this server runs 'stories')");
  r = c.Post("/v1/completions", R"({"prompt":"x","model":"stories","max_tokens":1})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

// Token logprobs, OpenAI's forms: completions' tokens / token_logprobs / top_logprobs /
// text_offset, whole and streamed (each chunk its tokens'); greedy picks the most likely token, so
// its logprob is the top one's. A constrained reply gives every token's too (the tokens its
// schema forces run a step each), and is the reply it is without logprobs. top_logprobs without
// logprobs, and more than 20, are 400s.
TEST(ServeLogprobs, CompletionsGiveEachTokensLogprob) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  c.set_read_timeout(60, 0);
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}, {"logprobs", 3}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json whole = json::parse(r->body);
  const json lp = whole["choices"][0]["logprobs"];
  const size_t n = whole["usage"]["completion_tokens"];
  ASSERT_EQ(lp["tokens"].size(), n) << r->body;
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  ASSERT_EQ(lp["top_logprobs"].size(), n);
  int64_t last_offset = -1;
  for (size_t i = 0; i < n; ++i) {
    const double chosen = lp["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0);
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 1u);
    EXPECT_LE(top.size(), 3u);
    double best = -1e30;
    for (const auto& [tok, v] : top.items()) best = std::max(best, v.get<double>());
    EXPECT_NEAR(chosen, best, 1e-9) << i;  // greedy
    EXPECT_GT(lp["text_offset"][i].get<int64_t>(), last_offset);
    last_offset = lp["text_offset"][i];
  }
  body["stream"] = true;
  r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  json streamed = json::array();
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: {", 0) != 0) continue;
    const json ch = json::parse(line.substr(6))["choices"][0];
    if (ch["logprobs"].is_object())
      for (const json& v : ch["logprobs"]["token_logprobs"]) streamed.push_back(v);
  }
  EXPECT_EQ(streamed, lp["token_logprobs"]);
  auto refused = [&](const json& b, const char* param) {
    auto rr = c.Post("/v1/completions", b.dump(), "application/json");
    ASSERT_TRUE(rr);
    EXPECT_EQ(rr->status, 400) << rr->body;
    EXPECT_EQ(json::parse(rr->body)["error"]["param"], param) << rr->body;
  };
  const json format = {
      {"type", "json_schema"},
      {"json_schema",
       {{"name", "answer"},
        {"schema", json::parse(R"({"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
          "reason": {"type": "string", "maxLength": 12}}, "required": ["answer", "reason"],
          "additionalProperties": false})")}}}};
  json constrained = {{"prompt", "Once upon a time"},
                      {"max_tokens", 64},
                      {"temperature", 0},
                      {"response_format", format},
                      {"return_token_ids", true}};
  auto plain = c.Post("/v1/completions", constrained.dump(), "application/json");
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->status, 200) << plain->body;
  constrained["logprobs"] = 2;
  auto with_lp = c.Post("/v1/completions", constrained.dump(), "application/json");
  ASSERT_TRUE(with_lp);
  ASSERT_EQ(with_lp->status, 200) << with_lp->body;
  const json a = json::parse(plain->body)["choices"][0], b = json::parse(with_lp->body)["choices"][0];
  EXPECT_EQ(a["text"], b["text"]);
  EXPECT_EQ(a["token_ids"], b["token_ids"]);
  EXPECT_EQ(json::parse(a["text"].get<std::string>())["answer"].is_string(), true) << a["text"];
  ASSERT_EQ(b["logprobs"]["token_logprobs"].size(), b["token_ids"].size()) << with_lp->body;
  for (const json& v : b["logprobs"]["token_logprobs"]) EXPECT_LE(v.get<double>(), 0.0);
  refused({{"prompt", "x"}, {"logprobs", 21}}, "logprobs");
  auto chat = c.Post(
      "/v1/chat/completions",
      json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"top_logprobs", 2}}.dump(),
      "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 400) << chat->body;
}

// OpenAI's logit_bias: -100 bans the greedy first token, +100 makes another the choice; bad maps
// are 400s naming the field.
TEST(ServeSampling, LogitBiasBansAndForcesTokens) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  auto ids = [&](const json& bias) {
    const json body = {{"prompt", "Once upon a time"},
                       {"max_tokens", 4},
                       {"temperature", 0},
                       {"logit_bias", bias},
                       {"return_token_ids", true}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    if (!r || r->status != 200) {
      ADD_FAILURE() << (r ? r->body : "no reply");
      return std::vector<int32_t>{};
    }
    return json::parse(r->body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  };
  const std::vector<int32_t> plain = ids(json::object());
  ASSERT_FALSE(plain.empty());
  const std::string first = std::to_string(plain[0]);
  const std::vector<int32_t> banned = ids({{first, -100}});
  ASSERT_FALSE(banned.empty());
  EXPECT_NE(banned[0], plain[0]);
  const int32_t other = plain[0] == 300 ? 301 : 300;
  EXPECT_EQ(ids({{std::to_string(other), 100}}), std::vector<int32_t>(4, other));
  for (const json& bad : {json{{"x", 1}}, json{{"5", 101}}, json{{"5", "1"}}, json{{"512", 1}}, json(3)}) {
    const json body = {{"prompt", "Once"}, {"max_tokens", 1}, {"logit_bias", bad}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad << " " << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "logit_bias") << r->body;
  }
}

// --guidance-grammar-size bounds what a schema may compile to: past it, a 400 that says so; the
// server goes on serving.
TEST(ServeFlags, GuidanceGrammarSizeRefusesLargerSchemas) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1", "--guidance-grammar-size", "30"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  const json schema = json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"},
    "b": {"type": "string"}, "c": {"type": "array", "items": {"type": "number"}}}, "required": ["a", "b", "c"]})");
  json body = {
      {"prompt", "Once"},
      {"max_tokens", 4},
      {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}}}}}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("grammar size"),
            std::string::npos)
      << r->body;
  body.erase("response_format");
  r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

// A seeded sampled reply is the same whether its session held the prompt or something else: the
// last prompt token always runs as a one-row step (a prefill row rounds differently). Real
// SmolLM2-135M, where every one of these replies differed before.
TEST(ServeDeterminism, SeededReplyDoesNotDependOnTheSessionsCache) {
  const std::string gguf = smollm2_gguf();
  NBITS_REQUIRE_SHARED(gguf);
  NBITS_REQUIRE_BIN();
  OwnServer server(gguf, {"-t", "1", "--parallel", "1", "--ctx", "512"});
  ASSERT_GT(server.p.port, 0) << server.p.log;
  httplib::Client c("127.0.0.1", server.p.port);
  c.set_read_timeout(120, 0);
  auto ids = [&](const json& body) {
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    if (!r || r->status != 200) {
      ADD_FAILURE() << (r ? r->body : "no reply");
      return std::vector<int32_t>{};
    }
    return json::parse(r->body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  };
  for (const char* prompt : {"Once upon a time", "The capital of France is", "def fib(n):"}) {
    for (int seed : {1, 2}) {
      SCOPED_TRACE(std::string(prompt) + " seed " + std::to_string(seed));
      ids({{"prompt", "Something else entirely"},
           {"max_tokens", 2},
           {"return_token_ids", true}});  // held before
      const json body = {{"prompt", prompt},
                         {"max_tokens", 40},
                         {"temperature", 1.0},
                         {"seed", seed},
                         {"return_token_ids", true}};
      const std::vector<int32_t> fresh = ids(body);
      ASSERT_FALSE(fresh.empty());
      EXPECT_EQ(ids(body), fresh);  // the prompt cached but its last token
    }
  }
}

// Chat logprobs on SmolLM2: {"content": [{token, logprob, bytes, top_logprobs}]}, one a token.
TEST(ServeLogprobs, ChatGivesContentLogprobs) {
  const std::string gguf = smollm2_gguf();
  NBITS_REQUIRE_SHARED(gguf);
  NBITS_REQUIRE_BIN();
  OwnServer server(gguf, {"-t", "1", "--ctx", "512"});
  ASSERT_GT(server.p.port, 0) << server.p.log;
  httplib::Client c("127.0.0.1", server.p.port);
  c.set_read_timeout(120, 0);
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
                     {"max_tokens", 6},
                     {"temperature", 0},
                     {"logprobs", true},
                     {"top_logprobs", 2}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json reply = json::parse(r->body);
  const json& content = reply["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), reply["usage"]["completion_tokens"].get<size_t>()) << r->body;
  std::string joined;
  for (const json& e : content) {
    ASSERT_EQ(e["top_logprobs"].size(), 2u) << e;
    EXPECT_NEAR(e["logprob"].get<double>(), e["top_logprobs"][0]["logprob"].get<double>(), 1e-9) << e;
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    std::string from_bytes;
    for (const json& b : e["bytes"]) from_bytes += static_cast<char>(b.get<int>());
    EXPECT_EQ(from_bytes, e["token"].get<std::string>());
    joined += from_bytes;
  }
  EXPECT_EQ(joined, reply["choices"][0]["message"]["content"].get<std::string>());
}

// tools on the real SmolLM2-135M-Instruct (its template has no tools: the generic form, tools
// described in a system message and a call {"tool_calls": [...]}). tool_choice required / a named
// function constrain the reply to valid calls however weak the model; they come back as
// message.tool_calls (streamed as delta.tool_calls) with finish_reason "tool_calls", and their
// arguments follow the schemas. Then a round trip's history renders, and bad tools are 400s.
TEST(ServeTools, RequiredCallsAreValidCallsOnSmolLM2) {
  const std::string gguf = smollm2_gguf();
  NBITS_REQUIRE_SHARED(gguf);
  NBITS_REQUIRE_BIN();
  OwnServer server(gguf, {"-t", "2", "--ctx", "2048"});
  ASSERT_GT(server.p.port, 0) << server.p.log;
  httplib::Client cl("127.0.0.1", server.p.port);
  cl.set_read_timeout(120);
  auto post = [&](const std::string& path, const json& body) {
    return cl.Post(path, body.dump(), "application/json");
  };
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
        "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
      "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "integer", "minimum": 0,
      "maximum": 99}}, "required": ["a", "b"], "additionalProperties": false}}}])");
  const json msgs =
      json::array({{{"role", "user"}, {"content", "What is 2 plus 3? And the weather in Oslo?"}}});
  auto check_call = [](const json& call) -> std::string {
    SCOPED_TRACE(call.dump());
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
    const std::string name = call["function"]["name"];
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    if (name == "add") {
      EXPECT_TRUE(args["a"].is_number_integer() && args["b"].is_number_integer());
    } else {
      EXPECT_EQ(name, "get_weather");
      EXPECT_TRUE(args["city"].is_string());
      EXPECT_TRUE(args["unit"] == "celsius" || args["unit"] == "fahrenheit");
    }
    return name;
  };
  for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "add"}}}}}) {
    const json body = {{"messages", msgs}, {"max_tokens", 120},     {"temperature", 0},
                       {"tools", tools},   {"tool_choice", choice}, {"parallel_tool_calls", false}};
    auto r = post("/v1/chat/completions", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json c = json::parse(r->body)["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls") << r->body;
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << r->body;
    EXPECT_TRUE(c["message"]["content"].is_null()) << r->body;
    const std::string name = check_call(c["message"]["tool_calls"][0]);
    if (choice.is_object()) {
      EXPECT_EQ(name, "add");
    }
    // Streamed: the same call as a delta.tool_calls chunk, then finish_reason tool_calls.
    json sb = body;
    sb["stream"] = true;
    auto sr = post("/v1/chat/completions", sb);
    ASSERT_TRUE(sr);
    ASSERT_EQ(sr->status, 200) << sr->body;
    int seen = 0;
    std::string finish;
    std::istringstream lines(sr->body);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
      const json ch = json::parse(line.substr(6))["choices"][0];
      if (ch["delta"].contains("tool_calls")) {
        ++seen;
        EXPECT_EQ(ch["delta"]["tool_calls"][0]["index"], 0);
        EXPECT_EQ(check_call(ch["delta"]["tool_calls"][0]), name);
      }
      if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
    EXPECT_EQ(seen, 1);
    EXPECT_EQ(finish, "tool_calls");
  }
  // auto: SmolLM2 answers in words here; no call is made up from them.
  auto a = post("/v1/chat/completions",
                {{"messages", msgs}, {"max_tokens", 20}, {"temperature", 0}, {"tools", tools}});
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  EXPECT_FALSE(json::parse(a->body)["choices"][0]["message"].contains("tool_calls")) << a->body;
  // The history of a round trip renders: an assistant call and the tool's result.
  json turn = msgs;
  turn.push_back({{"role", "assistant"},
                  {"content", nullptr},
                  {"tool_calls",
                   json::array({{{"id", "call_1"},
                                 {"type", "function"},
                                 {"function", {{"name", "add"}, {"arguments", "{\"a\": 1, \"b\": 2}"}}}}})}});
  turn.push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "3"}});
  auto t = post("/v1/chat/completions",
                {{"messages", turn}, {"max_tokens", 8}, {"temperature", 0}, {"tools", tools}});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, 200) << t->body;
  // Refusals name the field.
  auto refused = [&](const json& extra, const std::string& param) {
    json b = {{"messages", msgs}, {"max_tokens", 4}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    auto r = post("/v1/chat/completions", b);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], param) << r->body;
  };
  refused({{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
          "tool_choice");
  refused({{"tool_choice", "required"}}, "tool_choice");
  refused({{"tools", tools}, {"tool_choice", "sometimes"}}, "tool_choice");
  refused({{"tools", json::array({{{"type", "function"}, {"function", {{"name", "bad name!"}}}}})}},
          "tools[0].function.name");
  refused({{"tools", json::array({{{"type", "retrieval"}}})}}, "tools[0].type");
  refused({{"tools", tools}, {"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}},
          "response_format");
  // An assistant's reasoning (passed back on a tool loop) is a string, on assistant messages only.
  json with_reasoning = turn;
  with_reasoning[1]["reasoning_content"] = 5;
  refused({{"messages", with_reasoning}}, "messages[1].reasoning_content");
  with_reasoning[1].erase("reasoning_content");
  with_reasoning[0]["thinking"] = "hm";
  refused({{"messages", with_reasoning}}, "messages[0].thinking");
  with_reasoning[0].erase("thinking");
  with_reasoning[1]["reasoning_content"] = "The user asks for a sum: call add.";
  auto rr = post("/v1/chat/completions",
                 {{"messages", with_reasoning}, {"max_tokens", 4}, {"temperature", 0}, {"tools", tools}});
  ASSERT_TRUE(rr);
  EXPECT_EQ(rr->status, 200) << rr->body;
  auto comp = post("/v1/completions", {{"prompt", "x"}, {"tools", tools}});
  ASSERT_TRUE(comp);
  EXPECT_EQ(comp->status, 400) << comp->body;
}

// stories260K behind a chat template that writes tool calls in a native format (the marker is
// what the server keys on): a required call comes back as message.tool_calls, whole and streamed.
// The markers are not tokens of its vocabulary: the grammar spells them as text.
TEST(ServeTools, NativeFormatsGiveToolCalls) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  const std::vector<std::pair<std::string, std::string>> formats = {
      {"llama3", "{% if m.tool_calls %}<|python_tag|>{{ m.tool_calls|tojson }}{% endif %}"},
      {"mistral", "{% if m.tool_calls %}[TOOL_CALLS]{{ m.tool_calls|tojson }}{% endif %}"},
      {"tool_call_tag", "{% if m.tool_calls %}<|tool_call|>{{ m.tool_calls|tojson }}{% endif %}"},
      {"xml_function",
       "{% if m.tool_calls %}<tool_call>\n<function={{ m.tool_calls[0].function.name }}>\n"
       "{% for k, v in m.tool_calls[0].function.arguments|items %}<parameter={{ k }}>\n{{ v "
       "}}\n</parameter>\n"
       "{% endfor %}</function>\n</tool_call>{% endif %}"},
      {"seed_xml_function",
       "{% if m.tool_calls %}<seed:tool_call>\n<function={{ m.tool_calls[0].function.name }}>\n"
       "{% for k, v in m.tool_calls[0].function.arguments|items %}<parameter={{ k }}>{{ v }}</parameter>\n"
       "{% endfor %}</function>\n</seed:tool_call>{% endif %}"},
      // gpt-oss's channels, spelled here with ordinary tokens: the call follows an optional
      // analysis message, which ReplyChannels gives as reasoning_content.
      {"harmony",
       "{% if m.tool_calls %}<|channel|>commentary to=functions.{{ m.tool_calls[0].function.name }} "
       "<|constrain|>json<|message|>{{ m.tool_calls[0].function.arguments|tojson }}<|call|>{% endif %}"},
      // DeepSeek-R1 and its distills: full-width markers (byte tokens here). (Their templates do not
      // present `tools`; the server's system text that does is longer than stories' 512-token
      // context in bytes: tests/serve/tool_call_deepseek_test.cc checks it.)
      {"deepseek_r1",
       "{% if m.tool_calls %}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
       "{{ m.tool_calls[0].function.name }}\n```json\n{{ m.tool_calls[0].function.arguments }}\n```"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>{% endif %}"},
  };
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
    "b": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a", "b"],
    "additionalProperties": false}}}])");
  for (const auto& [name, calls_part] : formats) {
    SCOPED_TRACE(name);
    const fs::path dir =
        fs::temp_directory_path() / ("nbits_serve_" + name + "_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const char* f : {"genai_config.json", "model.onnx", "tokenizer.json"}) {
      std::error_code ec;
      fs::remove(dir / f, ec);
      fs::create_symlink(fs::path(model_dir()) / f, dir / f);
    }
    json cfg = json::parse(slurp_text(model_dir() + "/tokenizer_config.json"));
    cfg["chat_template"] =
        "{{ bos_token }}{% if tools %}Tools: {{ tools|tojson }}\n{% endif %}"
        "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}" +
        calls_part + "\n{% endfor %}{% if add_generation_prompt %}<assistant> {% endif %}";
    std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
    OwnServer s(dir.string(), {"-t", "1", "--ctx", "512"});
    ASSERT_GT(s.p.port, 0) << s.p.log;
    httplib::Client c("127.0.0.1", s.p.port);
    c.set_read_timeout(120, 0);
    json body = {{"messages", json::array({{{"role", "user"}, {"content", "Add two and three."}}})},
                 {"max_tokens", 320},  // DeepSeek's markers as bytes: ~130 tokens of stories' vocabulary
                 {"temperature", 0},
                 {"tools", tools},
                 {"tool_choice", "required"},
                 {"parallel_tool_calls", false}};
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json ch = json::parse(r->body)["choices"][0];
    EXPECT_EQ(ch["finish_reason"], "tool_calls") << r->body;
    ASSERT_GE(ch["message"]["tool_calls"].size(), 1u) << r->body;
    const json call = ch["message"]["tool_calls"][0];
    EXPECT_EQ(call["function"]["name"], "add");
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    EXPECT_TRUE(args["a"].is_number_integer() && args["b"].is_number_integer()) << args;
    body["stream"] = true;
    r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("\"tool_calls\""), std::string::npos) << r->body;
    EXPECT_NE(r->body.find("\"finish_reason\":\"tool_calls\""), std::string::npos) << r->body;
    // auto: the grammar that keeps a started call well formed leaves stories' story alone.
    body["stream"] = false;
    body["tool_choice"] = "auto";
    body["max_tokens"] = 24;
    r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json told = json::parse(r->body)["choices"][0];
    EXPECT_EQ(told["finish_reason"], "length") << r->body;
    EXPECT_FALSE(told["message"].contains("tool_calls")) << r->body;
    EXPECT_GT(told["message"]["content"].get<std::string>().size(), 20u) << r->body;
    if (name == "xml_function") {  // a string pattern the bare-value grammar cannot carry
      json odd = tools;
      odd[0]["function"]["parameters"]["properties"]["a"] = {{"type", "string"}, {"pattern", "^1|2$"}};
      body["tools"] = odd;
      r = c.Post("/v1/chat/completions", body.dump(), "application/json");  // auto: unconstrained
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 200) << r->body;
      body["tool_choice"] = "required";
      r = c.Post("/v1/chat/completions", body.dump(), "application/json");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << r->body;
      EXPECT_EQ(json::parse(r->body)["error"]["param"], "tools") << r->body;
    }
    fs::remove_all(dir);
  }
}

// reasoning_content: stories260K behind a template whose generation prompt opens <think>, so the
// whole reply is reasoning (llama-server's and DeepSeek's field), whole and streamed as
// delta.reasoning_content; reasoning_format "none" keeps it in the content.
TEST(ServeReasoning, AnOpenThinkBlockIsReasoningContent) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  const fs::path dir = fs::temp_directory_path() / ("nbits_serve_think_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"genai_config.json", "model.onnx", "tokenizer.json"}) {
    std::error_code ec;
    fs::remove(dir / f, ec);
    fs::create_symlink(fs::path(model_dir()) / f, dir / f);
  }
  json cfg = json::parse(slurp_text(model_dir() + "/tokenizer_config.json"));
  cfg["chat_template"] =
      "{{ bos_token }}{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}</think>\n{% endfor %}"
      "{% if add_generation_prompt %}<assistant> <think>\n{% endif %}";
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  OwnServer s(dir.string(), {"-t", "1", "--ctx", "512"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  c.set_read_timeout(120, 0);
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Once upon a time"}}})},
               {"max_tokens", 24},
               {"temperature", 0}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json msg = json::parse(r->body)["choices"][0]["message"];
  const std::string thought = msg.value("reasoning_content", "");
  EXPECT_FALSE(thought.empty()) << r->body;
  EXPECT_EQ(msg["content"], "") << r->body;
  // Streamed: the same text as reasoning_content deltas, no content.
  body["stream"] = true;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string streamed, content;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
    const json d = json::parse(line.substr(6))["choices"][0]["delta"];
    streamed += d.value("reasoning_content", "");
    content += d.value("content", "");
  }
  EXPECT_EQ(streamed, thought);
  EXPECT_EQ(content, "");
  // reasoning_format "none": the text stays in the content.
  body["stream"] = false;
  body["reasoning_format"] = "none";
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json inline_msg = json::parse(r->body)["choices"][0]["message"];
  EXPECT_EQ(inline_msg["content"], thought) << r->body;
  EXPECT_FALSE(inline_msg.contains("reasoning_content")) << r->body;
  body["reasoning_format"] = "hidden";
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "reasoning_format") << r->body;
  fs::remove_all(dir);
}

TEST(ServeFlags, NoWebuiAnswers404AtTheRoot) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1", "--no-webui"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  auto r = httplib::Client("127.0.0.1", s.p.port).Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(s.p.log.find("chat page"), std::string::npos) << s.p.log;
}

// The chat page (GET /) in a real browser: Debian's chromium, headless, driven by playwright-core
// (tests/serve/node/webui_test.mjs): the API key prompt, a streamed answer, regenerate, Stop
// mid-stream freeing the server's session (/metrics), conversations kept across a reload, on a
// phone-sized screen. The model is the real Qwen2.5-Coder-0.5B-Instruct Q4_K_M (tools/setup_models.sh):
// a stories260K answer ends within its 512-token context before Stop can be pressed. The
// screenshot goes to the temp folder (its path is printed).
TEST(ServeChatPage, InABrowser) {
  const char* cache_env = std::getenv("NBITS_CACHE");
  const char* home = std::getenv("HOME");
  const std::string cache = cache_env != nullptr && *cache_env
                                ? cache_env
                                : std::string(home != nullptr ? home : ".") + "/.cache/nbits";
  const std::string qwen = cache + "/qwen25-coder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
  NBITS_REQUIRE_SHARED(qwen);
  NBITS_REQUIRE_BIN();
  OwnServer s(qwen, {"-t", "2", "--ctx", "2048", "--api-key", kKey});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  EXPECT_NE(s.p.log.find("chat page: http://"), std::string::npos) << s.p.log;
  {  // The page itself, served without a key from the binary.
    auto page = httplib::Client("127.0.0.1", s.p.port).Get("/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_NE(page->body.find("<title>nbits chat</title>"), std::string::npos);
  }
  const std::string node_dir = std::string(nbits::testing::source_dir()) + "/tests/serve/node";
  const char* chromium_env = std::getenv("CHROMIUM");
  const std::string chromium = chromium_env != nullptr && *chromium_env ? chromium_env : "/usr/bin/chromium";
  for (const std::string& need : {node_dir + "/node_modules/playwright-core/package.json", chromium}) {
    if (!fs::exists(need)) {
      if (in_ci())
        FAIL() << "missing " << need << " (tools/setup.sh installs chromium; npm ci in tests/serve/node)";
      GTEST_SKIP() << "missing " << need;
    }
  }
  const fs::path shot = fs::temp_directory_path() / "nbits_chat_page.png";
  const std::string cmd = "cd '" + node_dir + "' && CHROMIUM='" + chromium + "' node webui_test.mjs " +
                          std::to_string(s.p.port) + " " + kKey + " '" + shot.string() + "' 2>&1";
  const auto [status, out] = shell(cmd);
  ASSERT_NE(out.find('{'), std::string::npos) << out;
  const json got = json::parse(out.substr(out.rfind("{\"checks\"")));
  EXPECT_EQ(status, 0) << out;
  EXPECT_TRUE(got["failures"].empty()) << got["failures"].dump(1);
  EXPECT_GE(got["checks"].size(), 15u) << out;
  EXPECT_TRUE(fs::exists(shot));
  std::printf("chat page screenshot: %s\n", shot.string().c_str());
}

// A raw TCP connection to 127.0.0.1:port that sends nothing (it holds one of --connections).
int idle_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(ServeLimits, ConnectionsBeyondThePoolGet503) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1", "--connections", "2"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  EXPECT_NE(s.p.log.find(", 2 connections,"), std::string::npos) << s.p.log;
  // Two silent connections are the two open connections served: a third gets 503 at once (after
  // a 250 ms grace for one to close) instead of waiting without bound.
  const int a = idle_connection(s.p.port), b = idle_connection(s.p.port);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  httplib::Client c("127.0.0.1", s.p.port);
  c.set_read_timeout(10, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "too_many_connections") << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  close(a);
  close(b);
  // Once they have gone, requests are served again.
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    httplib::Client c2("127.0.0.1", s.p.port);
    auto ok = c2.Get("/health");
    status = ok ? ok->status : -1;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
  // No CORS unless asked.
  auto h = httplib::Client("127.0.0.1", s.p.port).Get("/health", {{"Origin", "http://app.example"}});
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->has_header("Access-Control-Allow-Origin"));
  auto m = httplib::Client("127.0.0.1", s.p.port).Get("/metrics");
  ASSERT_TRUE(m);
  // At least the one above (a retry right after the close may have been refused too).
  const size_t at = m->body.find("\nnbits_requests_rejected_connections_total ");
  ASSERT_NE(at, std::string::npos) << m->body;
  EXPECT_GE(std::stoi(m->body.substr(at + 43)), 1) << m->body;
}

// A random-weight model big enough that a prompt takes seconds to prefill on one or two
// threads (hidden 512, 4 layers, the stories260K vocabulary), made by `nbits make-model`.
std::string mid_model_dir() {
  static const std::string dir = [] {
    const fs::path d = fs::temp_directory_path() / ("nbits_serve_mid_" + std::to_string(::getpid()));
    const RunResult r =
        run_nbits({"make-model", "--arch",           "custom",    "--hidden",   "512",     "--layers",
                   "4",          "--heads",          "8",         "--kv-heads", "2",       "--head-size",
                   "64",         "--intermediate",   "1408",      "--vocab",    "512",     "--context",
                   "4096",       "--tokenizer-from", model_dir(), "-o",         d.string()});
    if (r.exit_code != 0) return std::string();
    static std::string made = d.string();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(made, ec);
    });
    return d.string();
  }();
  return dir;
}

std::vector<int32_t> random_ids(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(3 + rng() % 509);
  return ids;
}

using Clock = std::chrono::steady_clock;

// Streams a completion, recording when each content token arrived; stop_after_bytes > 0 closes
// the connection once that many bytes came. Returns the raw body.
// The value of an unlabelled metric in /metrics text (-1 when absent).
double metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

std::string timed_stream(int port, const json& body, std::vector<Clock::time_point>* token_times,
                         size_t stop_after_bytes = 0) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  json b = body;
  b["stream"] = true;
  req.body = b.dump();
  req.set_header("Content-Type", "application/json");
  std::string raw;
  size_t parsed = 0;
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    raw.append(d, n);
    for (size_t end; (end = raw.find("\n\n", parsed)) != std::string::npos; parsed = end + 2) {
      const std::string ev = raw.substr(parsed, end - parsed);
      if (ev.rfind("data: {", 0) != 0 || token_times == nullptr) continue;
      const json j = json::parse(ev.substr(6));
      if (j.contains("choices") && !j["choices"].empty() && j["choices"][0]["finish_reason"].is_null())
        token_times->push_back(Clock::now());
    }
    return stop_after_bytes == 0 || raw.size() < stop_after_bytes;
  };
  c.send(req);
  return raw;
}

double metric(int port, const std::string& name) {
  auto m = httplib::Client("127.0.0.1", port).Get("/metrics");
  if (!m) return -1;
  const size_t p = m->body.find("\n" + name + " ");
  return p == std::string::npos ? -1 : std::stod(m->body.substr(p + name.size() + 2));
}

// The threads of a process (/proc/PID/status Threads:).
int thread_count(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// Connections cost a socket, not a thread: 200 silent connections stay open while a streamed
// request is served, and the server's thread count does not move (a thread per connection
// would add 200).
TEST(ServeLimits, IdleConnectionsCostNoThreads) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1", "--parallel", "2", "--connections", "256"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}};
  const std::string solo = timed_stream(s.p.port, body, nullptr);
  ASSERT_NE(solo.find("data: [DONE]"), std::string::npos) << solo;
  const int before = thread_count(s.p.pid);
  ASSERT_GT(before, 0);
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = idle_connection(s.p.port);
    ASSERT_GE(fd, 0) << i;
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::atomic<bool> streaming{true};
  std::atomic<int> most{thread_count(s.p.pid)};
  std::thread sampler([&] {
    while (streaming) {
      most = std::max(most.load(), thread_count(s.p.pid));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<Clock::time_point> times;
  const std::string got = timed_stream(s.p.port, body, &times);
  streaming = false;
  sampler.join();
  std::printf("threads: %d before, at most %d with 200 idle connections and a stream (%zu deltas)\n", before,
              most.load(), times.size());
  auto text = [](const std::string& raw) {
    std::string t;
    size_t pos = 0;
    for (size_t end; (end = raw.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
      const std::string ev = raw.substr(pos, end - pos);
      if (ev.rfind("data: {", 0) == 0)
        t += json::parse(ev.substr(6))["choices"][0]["text"].get<std::string>();
    }
    return t;
  };
  EXPECT_FALSE(text(solo).empty());
  EXPECT_EQ(text(got), text(solo));
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got;
  EXPECT_LE(most.load(), before + 1) << "threads grew with the connections";
  // main, signals, I/O, a worker or two: not one per connection (--connections 256 would be 256).
  EXPECT_LE(most.load(), 12);
  // The idle connections are still open and served: a request on one of them is answered.
  const std::string get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(idle[123], get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::string reply;
  char buf[512];
  for (ssize_t n; reply.find(R"({"status":"ok"})") == std::string::npos &&
                  (n = ::recv(idle[123], buf, sizeof buf, 0)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  for (int fd : idle) close(fd);
  EXPECT_EQ(metric(s.p.port, "nbits_requests_rejected_connections_total"), 0);
}

class ServePrefill : public ::testing::Test {
 protected:
  void SetUp() override {
    NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
    NBITS_REQUIRE_BIN();
    ASSERT_FALSE(mid_model_dir().empty()) << "nbits make-model failed";
  }
};

struct PrefillInterleave {
  double window = 0, max_gap = 0;
  size_t during = 0;
};

// A 3000-token prompt prefilled in 64-token chunks while another stream decodes: the prefill's
// length, the other stream's text deltas during it and the longest wait between them. seed: the
// prompt's ids (a second measurement needs another prompt: the server's prefix cache would
// answer the same one without a prefill).
PrefillInterleave prefill_against_a_stream(int port, uint32_t seed) {
  const size_t P = 3000;
  std::vector<Clock::time_point> b_times, a_times;
  std::thread b([&] {
    timed_stream(port, {{"prompt", json::array({1, 400, 300})}, {"max_tokens", 1900}, {"temperature", 0}},
                 &b_times);
  });
  while (b_times.size() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto a0 = Clock::now();
  timed_stream(port, {{"prompt", random_ids(P, seed)}, {"max_tokens", 2}, {"temperature", 0}}, &a_times);
  b.join();
  PrefillInterleave r;
  if (a_times.empty()) return r;
  const auto a1 = a_times.front();  // A's first text: its prefill is over
  std::vector<Clock::time_point> pts = {a0};
  for (auto t : b_times)
    if (t > a0 && t < a1) pts.push_back(t);
  pts.push_back(a1);
  for (size_t i = 1; i < pts.size(); ++i)
    r.max_gap = std::max(r.max_gap, std::chrono::duration<double>(pts[i] - pts[i - 1]).count());
  r.window = std::chrono::duration<double>(a1 - a0).count();
  r.during = pts.size() - 2;
  std::printf(
      "prefill of %zu tokens (%zu chunks of 64): %.3f s; the other stream: %zu text deltas meanwhile, "
      "max gap %.3f s\n",
      P, (P + 63) / 64, r.window, r.during, r.max_gap);
  return r;
}

TEST_F(ServePrefill, LongPromptDoesNotStallOtherStreams) {
  // Two worker threads shared by both sessions. Without turns the prefill's back-to-back
  // parallel sections kept the pool's mutex: the other stream got ~5 tokens in a 4-6 s prefill.
  OwnServer s(mid_model_dir(), {"-t", "2", "--parallel", "2", "--ctx", "4096", "--prefill-chunk", "64"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  const size_t chunks = (3000 + 63) / 64;
  // About a token per chunk (a delta can hold several tokens: byte tokens wait for a whole
  // UTF-8 character), and no gap near the prefill's length. The prefill lasts about half a
  // second on a fast core, so one scheduling hiccup of the 2-core CI machine (a parallel ctest
  // job) can make one gap that long: a second measurement decides (a stall fails both).
  auto ok = [&](const PrefillInterleave& r) {
    return r.window > 0 && r.during >= chunks / 4 && r.max_gap < r.window / 2;
  };
  PrefillInterleave r = prefill_against_a_stream(s.p.port, 7);
  if (!ok(r)) r = prefill_against_a_stream(s.p.port, 8);
  ASSERT_GT(r.window, 0) << "the long prompt got no text";
  EXPECT_GE(r.during, chunks / 4) << "the other stream stalled during the prefill";
  EXPECT_LT(r.max_gap, r.window / 2) << "the other stream waited for most of the prefill";
}

TEST_F(ServePrefill, DisconnectDuringPrefillStopsItWithinAChunk) {
  OwnServer s(mid_model_dir(), {"-t", "2", "--parallel", "1", "--ctx", "4096", "--prefill-chunk", "32"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  const size_t P = 3000;
  // The client leaves at the first keep-alive comment (250 ms into the prefill).
  const std::string raw = timed_stream(
      s.p.port, {{"prompt", random_ids(P, 11)}, {"max_tokens", 4}, {"temperature", 0}}, nullptr, 1);
  const auto gone = Clock::now();
  EXPECT_EQ(raw.rfind(": ping", 0), 0u) << raw;
  double busy = 1;
  while (Clock::now() - gone < std::chrono::seconds(20) && (busy = metric(s.p.port, "nbits_slots_busy")) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double freed_after = std::chrono::duration<double>(Clock::now() - gone).count();
  const double prefilled = metric(s.p.port, "nbits_prefill_tokens_total");
  const double chunks = metric(s.p.port, "nbits_prefill_chunks_total");
  const double seconds = metric(s.p.port, "nbits_prefill_seconds_total");
  std::printf(
      "client left at 250 ms: slot free %.3f s later, %.0f of %zu prompt tokens prefilled (%.0f chunks, "
      "%.3f "
      "s)\n",
      freed_after, prefilled, P, chunks, seconds);
  EXPECT_EQ(busy, 0);
  EXPECT_LT(prefilled, static_cast<double>(P)) << "the whole prompt was prefilled";
  // Stopped within a chunk or two of the departure: far less than the remaining prefill.
  ASSERT_GT(chunks, 0);
  EXPECT_LT(freed_after, 2.5 * seconds / chunks + 0.5);
  EXPECT_EQ(metric(s.p.port, "nbits_requests_cancelled_total"), 1);
  // The slot serves the next request.
  auto next =
      httplib::Client("127.0.0.1", s.p.port)
          .Post("/v1/completions",
                json({{"prompt", json::array({1, 400})}, {"max_tokens", 3}, {"temperature", 0}}).dump(),
                "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
  EXPECT_GE(json::parse(next->body)["usage"]["completion_tokens"].get<int>(), 1) << next->body;
}

TEST_F(ServePrefill, SigtermDuringPrefillEndsItAndExitsZero) {
  OwnServer s(mid_model_dir(), {"-t", "2", "--parallel", "1", "--ctx", "4096", "--prefill-chunk", "32"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  std::string raw;
  std::thread a([&] {
    raw = timed_stream(s.p.port, {{"prompt", random_ids(3000, 13)}, {"max_tokens", 4}, {"temperature", 0}},
                       nullptr);
  });
  while (metric(s.p.port, "nbits_prefill_chunks_total") < 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto t0 = Clock::now();
  const int rc = stop_server(s.p, std::chrono::seconds(30));
  const double exit_s = std::chrono::duration<double>(Clock::now() - t0).count();
  a.join();
  std::printf("SIGTERM during a 3000-token prefill: exited %.3f s later (rc %d)\n", exit_s, rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(raw.find("\"shutting_down\""), std::string::npos) << raw;
  EXPECT_NE(raw.find("data: [DONE]"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("\"text\""), std::string::npos) << "tokens came: the prefill was not stopped\n" << raw;
  EXPECT_LT(exit_s, 10);
}

// The resident set of a process, in bytes (VmRSS).
int64_t rss_bytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// 8 streaming clients x 20 requests each, mixed prompt lengths, on 4 sessions: every response
// complete (finish_reason, [DONE]) and equal to the same prompt's output from a lone client, no
// error, and the server's RSS flat between the second and the last rounds.
TEST(ServeLoad, EightClientsTwentyRequestsEachEqualTheirSoloOutput) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  // ASan's quarantine would hold freed memory up to its 256 MiB default and hide a leak's growth.
  std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  setenv("ASAN_OPTIONS", (asan + (asan.empty() ? "" : ":") + "quarantine_size_mb=4").c_str(), 1);
  OwnServer s(model_dir(), {"-t", "1", "--parallel", "4", "--queue", "8", "--ctx", "256"});
  setenv("ASAN_OPTIONS", asan.c_str(), 1);
  ASSERT_GT(s.p.port, 0) << s.p.log;
  const std::vector<std::string> prompts = {
      "Once", "The little dog was", "Lily and Ben went to the park. They",
      "One day, a big red ball rolled down the hill and",
      "Tom had a toy car. He liked to play with it every day. One morning"};
  auto body = [&](size_t i) {
    return json{{"prompt", prompts[i % prompts.size()]},
                {"max_tokens", 24 + static_cast<int>(i % 3) * 16},
                {"temperature", 0},
                {"stream", true}};
  };
  auto text_of = [](const std::string& raw, bool* complete) {
    std::string text;
    bool finish = false;
    size_t pos = 0;
    for (size_t end; (end = raw.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
      const std::string ev = raw.substr(pos, end - pos);
      if (ev.rfind("data: {", 0) != 0) continue;
      const json j = json::parse(ev.substr(6));
      text += j["choices"][0]["text"].get<std::string>();
      if (!j["choices"][0]["finish_reason"].is_null()) finish = true;
    }
    *complete = finish && raw.size() >= 14 && raw.compare(raw.size() - 14, 14, "data: [DONE]\n\n") == 0;
    return text;
  };
  const size_t kinds = prompts.size() * 3;
  std::vector<std::string> solo(kinds);
  for (size_t i = 0; i < kinds; ++i) {
    bool complete = false;
    solo[i] = text_of(timed_stream(s.p.port, body(i), nullptr), &complete);
    ASSERT_TRUE(complete) << i;
  }
  const int kClients = 8, kRequests = 20;
  std::vector<int> wrong(kClients, 0), incomplete(kClients, 0);
  int64_t rss_round2 = 0;
  std::vector<std::thread> threads;
  std::atomic<int> done_round2{0};
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      for (int r = 0; r < kRequests; ++r) {
        const size_t i = static_cast<size_t>(c * 7 + r) % kinds;
        bool complete = false;
        const std::string got = text_of(timed_stream(s.p.port, body(i), nullptr), &complete);
        if (!complete) ++incomplete[static_cast<size_t>(c)];
        if (got != solo[i]) ++wrong[static_cast<size_t>(c)];
        if (r == 1 && ++done_round2 == kClients) rss_round2 = rss_bytes(s.p.pid);
      }
    });
  for (auto& t : threads) t.join();
  const int64_t rss_end = rss_bytes(s.p.pid);
  EXPECT_EQ(incomplete, std::vector<int>(kClients, 0));
  EXPECT_EQ(wrong, std::vector<int>(kClients, 0));
  ASSERT_GT(rss_round2, 0);
  EXPECT_LT(rss_end, rss_round2 + (32 << 20)) << rss_round2 << " -> " << rss_end;
  auto m = httplib::Client("127.0.0.1", s.p.port).Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("nbits_request_errors_total 0\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("nbits_requests_rejected_total 0\n"), std::string::npos) << m->body;
  // The 4 sessions' decode steps ran batched (serve/batcher.h): more rows than runs.
  EXPECT_GT(metric(m->body, "nbits_decode_batch_rows_total"),
            1.5 * metric(m->body, "nbits_decode_batch_steps_total"))
      << m->body;
}

// Concurrent streams' decode steps run as batched steps (rows / steps well above 1) and give what
// each gives alone; --decode-batch off steps each alone (rows == steps), with the same output.
// Whether the streams overlap at all is up to the OS: on stories260K a stream of 100 tokens takes a
// few ms, so on a loaded 2-core machine (a parallel ctest) the 4 client threads can start far
// enough apart that no step finds a partner. "on" therefore gets up to 3 rounds to show batching;
// every round's output is checked.
TEST(ServeBatch, ConcurrentDecodeStepsRunBatched) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  const std::vector<std::string> prompts = {"Once", "The little dog was",
                                            "Lily and Ben went to the park. They", "One day"};
  constexpr int kTokens = 100;
  auto body = [&](size_t i) {
    return json{{"prompt", prompts[i]}, {"max_tokens", kTokens}, {"temperature", 0}, {"stream", true}};
  };
  std::vector<std::string> first;
  for (const char* mode : {"on", "off"}) {
    SCOPED_TRACE(mode);
    const bool on = std::string(mode) == "on";
    OwnServer s(model_dir(), {"-t", "2", "--parallel", "4", "--ctx", "256", "--decode-batch", mode});
    ASSERT_GT(s.p.port, 0) << s.p.log;
    double rows_before = 0, steps_before = 0;
    bool batched = false;
    for (int round = 0; round < (on ? 3 : 1) && !batched; ++round) {
      std::vector<std::string> got(prompts.size());
      std::vector<std::thread> threads;
      for (size_t i = 0; i < prompts.size(); ++i)
        threads.emplace_back([&, i] { got[i] = timed_stream(s.p.port, body(i), nullptr); });
      for (auto& t : threads) t.join();
      for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_NE(got[i].find("data: [DONE]"), std::string::npos) << got[i];
        // Each reply's content, not the ids or timestamps of its chunks.
        std::string text;
        size_t pos = 0;
        for (size_t end; (end = got[i].find("\n\n", pos)) != std::string::npos; pos = end + 2) {
          const std::string ev = got[i].substr(pos, end - pos);
          if (ev.rfind("data: {", 0) == 0)
            text += json::parse(ev.substr(6))["choices"][0]["text"].get<std::string>();
        }
        got[i] = text;
      }
      if (first.empty()) {
        first = got;
      } else {
        EXPECT_EQ(got, first) << "batched and one-by-one decode differ (round " << round << ")";
      }
      auto m = httplib::Client("127.0.0.1", s.p.port).Get("/metrics");
      ASSERT_TRUE(m);
      const double all_rows = metric(m->body, "nbits_decode_batch_rows_total"),
                   all_steps = metric(m->body, "nbits_decode_batch_steps_total");
      const double rows = all_rows - rows_before, steps = all_steps - steps_before;
      rows_before = all_rows;
      steps_before = all_steps;
      EXPECT_GE(rows, 4.0 * (kTokens - 1)) << m->body;
      std::printf("[serve batch] --decode-batch %s, round %d: %.0f decode steps in %.0f runs\n", mode, round,
                  rows, steps);
      if (on) {
        // 4 streams: ~kTokens runs on a quiet machine, ~2x that under a parallel ctest on 2 cores
        // (the streams' prefills land apart); one-by-one would be 4 * kTokens.
        batched = rows > 1.5 * steps;
      } else {
        EXPECT_EQ(rows, steps) << m->body;
      }
    }
    if (on) {
      EXPECT_TRUE(batched) << "no round of 4 concurrent streams ran batched";
    }
  }
}

// Speculative decoding in the server: per server (--spec) and per request ("speculative"), the
// replies are plain decoding's token for token (greedy and seeded sampling, streamed or not, and
// two sessions at once, whose decode steps batch), the draft model being the model itself.
TEST(ServeSpeculation, RepliesArePlainDecodings) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "2", "--parallel", "2", "--ctx", "256", "--spec", "lookup", "--draft-model",
                            model_dir(), "--draft-max", "6"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  EXPECT_NE(s.p.log.find("speculative decoding lookup"), std::string::npos) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  c.set_read_timeout(120, 0);
  auto ids_of = [&](json body) {
    body["return_token_ids"] = true;
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    if (!r || r->status != 200) {
      ADD_FAILURE() << (r ? r->body : "no reply");
      return std::vector<int32_t>{};
    }
    return json::parse(r->body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  };
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog was"};
  for (const json& sampling : {json{{"temperature", 0}}, json{{"temperature", 0.8}, {"seed", 42}}}) {
    for (const std::string& prompt : prompts) {
      json body = sampling;
      body["prompt"] = prompt;
      body["max_tokens"] = 80;
      body["speculative"] = "off";
      // The first request prefills the prompt; the later ones find it cached but its last token,
      // which every request runs as a step of its own: a seeded reply does not depend on it.
      const std::vector<int32_t> want = ids_of(body);
      ASSERT_FALSE(want.empty());
      for (const char* kind : {"lookup", "draft"}) {
        body["speculative"] = kind;
        EXPECT_EQ(ids_of(body), want) << kind << " " << sampling.dump();
      }
      body.erase("speculative");  // the server's --spec lookup
      EXPECT_EQ(ids_of(body), want) << "default " << sampling.dump();
    }
  }
  EXPECT_GT(metric(s.p.port, "nbits_speculative_verify_steps_total"), 0);
  EXPECT_GT(metric(s.p.port, "nbits_speculative_accepted_tokens_total"), 0);
  // Streams, two at once (their steps batch while both decode: speculation stands down then).
  auto text_of = [](const std::string& raw) {
    std::string text;
    size_t pos = 0;
    for (size_t end; (end = raw.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
      const std::string ev = raw.substr(pos, end - pos);
      if (ev.rfind("data: {", 0) == 0)
        text += json::parse(ev.substr(6))["choices"][0]["text"].get<std::string>();
    }
    return text;
  };
  auto stream_body = [&](size_t i, const char* kind) {
    return json{{"prompt", prompts[i]},
                {"max_tokens", 80},
                {"temperature", 0},
                {"stream", true},
                {"speculative", kind}};
  };
  std::vector<std::string> want(prompts.size()), got(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    want[i] = text_of(timed_stream(s.p.port, stream_body(i, "off"), nullptr));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i)
    threads.emplace_back(
        [&, i] { got[i] = text_of(timed_stream(s.p.port, stream_body(i, "draft"), nullptr)); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(got, want);
  // What cannot be served is the client's error, said by name.
  auto r = c.Post("/v1/completions", R"({"prompt":"x","speculative":"always"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("'speculative'"), std::string::npos) << r->body;
  // With a response_format: the same reply with and without speculation.
  std::string replies[2];
  for (int i = 0; i < 2; ++i) {
    const json body = {{"prompt", "Once upon a time"},
                       {"max_tokens", 60},
                       {"temperature", 0},
                       {"response_format", {{"type", "json_object"}}},
                       {"speculative", i == 0 ? "off" : "draft"}};
    r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    replies[i] = json::parse(r->body)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(replies[1], replies[0]);
  EXPECT_EQ(replies[0].rfind("{", 0), 0u) << replies[0];
}

TEST(ServeSpeculation, DraftNeedsADraftModel) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  const auto [rc, out] = shell(nbits_bin() + " serve -m " + model_dir() + " --port 0 --spec draft 2>&1");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--spec draft needs --draft-model FILE"), std::string::npos) << out;
  OwnServer s(model_dir(), {"-t", "1"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  auto r = httplib::Client("127.0.0.1", s.p.port)
               .Post("/v1/completions", R"({"prompt":"x","speculative":"draft"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("--draft-model"), std::string::npos) << r->body;
}

// Hostile and sloppy clients: unknown fields (accepted, as OpenAI's API does), a request whose
// headers never finish (slowloris), 1000 connects closed at once, a body shorter than its
// Content-Length; afterwards every well-formed request is answered.
TEST(ServeFaults, SloppyAndHostileClientsDoNotStopTheServer) {
  NBITS_REQUIRE_SHARED(model_dir() + "/model.onnx");
  NBITS_REQUIRE_BIN();
  OwnServer s(model_dir(), {"-t", "1", "--parallel", "2"});
  ASSERT_GT(s.p.port, 0) << s.p.log;
  httplib::Client c("127.0.0.1", s.p.port);
  c.set_read_timeout(30, 0);
  auto unknown =
      c.Post("/v1/completions",
             R"({"prompt":"Once","max_tokens":3,"logit_bias":{},"user":"u1","x_future_field":[1,2]})",
             "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 200) << unknown->body;
  auto send_raw = [&](const std::string& bytes) {
    const int fd = idle_connection(s.p.port);
    if (fd >= 0 && !bytes.empty()) {
      EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
    }
    return fd;
  };
  // Slowloris: three connections that send half a request line and stall.
  std::vector<int> slow;
  for (int i = 0; i < 3; ++i)
    slow.push_back(send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-"));
  // A body that ends early, then the connection closes.
  close(
      send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 500\r\n\r\n{\"prompt\":\"Once"));
  // 1000 connects, each closed at once (some with a reset). With a listen backlog of 5 a burst
  // lost SYNs (1 s retransmits: 170 s for the 1000); the server listens with SOMAXCONN.
  const auto storm = std::chrono::steady_clock::now();
  int connected = 0;
  for (int i = 0; i < 1000; ++i) {
    const int fd = idle_connection(s.p.port);
    if (fd < 0) continue;
    ++connected;
    if (i % 2) {
      linger l{1, 0};  // RST instead of FIN
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(fd);
  }
  EXPECT_EQ(connected, 1000);
  EXPECT_LT(std::chrono::steady_clock::now() - storm, std::chrono::seconds(30));
  // Served while the slow connections still hang.
  for (int i = 0; i < 5; ++i) {
    auto ok = c.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":4,"temperature":0})",
                     "application/json");
    ASSERT_TRUE(ok) << "request " << i << " after the connect storm got no answer";
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
  for (int fd : slow) close(fd);
  auto h = httplib::Client("127.0.0.1", s.p.port).Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

}  // namespace
}  // namespace nbits::testing
