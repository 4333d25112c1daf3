// The HTTP front-end of `nbits serve`: routes, OpenAI response shapes, SSE, the per-request
// generation loop on a slot (see slots.h), /metrics. Uses only the public API (include/nbits).
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nbits/nbits.h"
#include "serve/batcher.h"
#include "serve/http.h"
#include "serve/http_server.h"
#include "serve/request.h"
#include "serve/serve.h"
#include "serve/slots.h"
#include "serve/stop_text.h"
#include "serve/token_logprobs.h"
#include "serve/tool_calls.h"
#include "serve/turns.h"
#include "serve/webui.h"
#include "tokenizer/chat_reply.h"

namespace nbits::serve {
namespace {

// The Generator's options for one request (every knob explicit: OpenAI's defaults, not the model's).
GenerationOptions generation_options(const GenRequest& r) {
  const SamplingParams& s = r.sampling;
  GenerationOptions o;
  o.guidance_type = r.guidance_type;
  o.guidance_data = r.guidance_data;
  o.temperature = s.temperature;
  o.do_sample = s.temperature > 0;
  o.top_k = s.top_k;
  o.top_p = s.top_p;
  o.min_p = s.min_p;
  o.repetition_penalty = s.repetition_penalty;
  o.presence_penalty = s.presence_penalty;
  o.frequency_penalty = s.frequency_penalty;
  o.logit_bias = s.logit_bias;
  o.seed = s.seed;
  return o;
}

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Generated text may hold bytes that are not UTF-8 (a model can emit lone byte tokens):
// they become U+FFFD rather than an exception.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

struct Metrics {
  std::atomic<uint64_t> requests_chat{0}, requests_completions{0}, requests_other{0}, errors{0},
      rejected_busy{0}, rejected_connections{0}, cancelled{0}, prompt_tokens{0}, cached_tokens{0},
      completion_tokens{0}, prefill_us{0}, decode_us{0}, prefill_tokens{0}, prefill_chunks{0}, spec_steps{0},
      spec_verify_steps{0}, spec_drafted{0}, spec_accepted{0};
};

// One accepted generation request: what the content provider runs.
struct Job {
  GenRequest req;
  ToolFormat tool_format = ToolFormat::kGeneric;  // req.tools.any(): how the model writes calls
  // Chat: how the template marks reasoning (reasoning_content), and whether the prompt left a
  // <think> open.
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  bool reasoning_open = false;
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  std::string speculative;  // GenerationOptions::speculative: the request's, else the server's
  std::string id;
  int64_t created = 0;
  SlotPool* pool = nullptr;
  ~Job() {
    if (pool) pool->unadmit();
  }
};

class Server {
 public:
  explicit Server(const ServeOptions& o)
      : opt_(o),
        id_rng_(std::random_device{}()),
        turns_(o.threads != 1 && (o.threads > 1 || std::thread::hardware_concurrency() > 1)),
        batcher_(
            [this](std::span<Generator* const> gens) {
              const Turns::Turn turn = turns_.decode();
              generate_next_tokens(gens);  // runs each one's token drawn last, then draws the next
            },
            o.decode_batch) {}
  int run();

 private:
  void route(const HttpRequest& req, HttpResponse& res);
  void refusal(Refusal why, const std::string& detail, HttpResponse& res);
  bool authorized(const HttpRequest& req, HttpResponse& res);
  bool ready(HttpResponse& res);
  void handle_generate(const HttpRequest& req, HttpResponse& res, Endpoint endpoint);
  void tokenize(const HttpRequest& req, HttpResponse& res);
  void detokenize(const HttpRequest& req, HttpResponse& res);
  void run_job(Job& job, ResponseWriter& sink);
  // The chat prompt: the template with the request's tools (in the format the template knows, or
  // described in a system message), and the grammar of a required call as the job's guidance.
  std::string chat_prompt(Job& job);
  json chunk(const Job& job, json choice) const;
  std::string new_id(const char* prefix);
  void send_error(HttpResponse& res, const ApiError& e);
  std::string metrics_text() const;

  ServeOptions opt_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<bool> ready_{false};
  std::shared_ptr<const Model> model_;
  std::shared_ptr<const Model> draft_;  // --draft-model
  std::unique_ptr<SlotPool> pool_;
  std::string model_id_;
  int64_t created_ = 0;
  Metrics m_;
  std::mutex id_mu_;
  std::mt19937_64 id_rng_;
  Turns turns_;
  DecodeBatcher batcher_;              // decode steps of concurrent sessions as one batched step
  std::atomic<bool> stopping_{false};  // a signal came: no new work; prefills and waiters end
  std::atomic<bool> aborting_{false};  // a second signal: generations end at their next token
  int connections_ = 0;                // open connections served (--connections)
};

void Server::send_error(HttpResponse& res, const ApiError& e) {
  ++m_.errors;
  res.status = e.status;
  res.set_content(dump(e.body()), "application/json");
}

std::string Server::new_id(const char* prefix) {
  std::lock_guard<std::mutex> lock(id_mu_);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix, static_cast<unsigned long long>(id_rng_()),
                static_cast<unsigned long long>(id_rng_() & 0xffffffffu));
  return buf;
}

bool Server::authorized(const HttpRequest& req, HttpResponse& res) {
  if (opt_.api_key.empty()) return true;
  const std::string want = "Bearer " + opt_.api_key;
  const std::string got = req.header("Authorization");
  unsigned diff = got.size() == want.size() ? 0u : 1u;
  for (size_t i = 0; i < want.size(); ++i)
    diff |= static_cast<unsigned char>(i < got.size() ? got[i] : 0) ^ static_cast<unsigned char>(want[i]);
  if (diff == 0) return true;
  send_error(
      res, ApiError(401, got.empty() ? "missing API key (Authorization: Bearer KEY)" : "invalid API key", "",
                    "invalid_api_key"));
  return false;
}

bool Server::ready(HttpResponse& res) {
  if (ready_) return true;
  send_error(res, ApiError(503, "the model is loading", "", "model_loading", "server_error"));
  res.set_header("Retry-After", "1");
  return false;
}

json Server::chunk(const Job& job, json choice) const {
  const bool chat = job.req.endpoint == Endpoint::kChat;
  json c = {{"id", job.id},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", job.created},
            {"model", model_id_},
            {"choices", json::array({std::move(choice)})}};
  if (job.req.include_usage) c["usage"] = nullptr;
  return c;
}

json usage_json(int64_t prompt, int64_t completion, int64_t cached) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

void Server::handle_generate(const HttpRequest& req, HttpResponse& res, Endpoint endpoint) {
  ++(endpoint == Endpoint::kChat ? m_.requests_chat : m_.requests_completions);
  if (!authorized(req, res) || !ready(res)) return;
  auto job = std::make_shared<Job>();
  try {
    job->req = parse_gen_request(parse_body(req.body), endpoint, req.body);
    const GenRequest& r = job->req;
    if (opt_.strict_model_name && !r.model.empty() && r.model != model_id_)
      throw ApiError(404, "the model '" + r.model + "' does not exist (this server runs '" + model_id_ + "')",
                     "model", "model_not_found");
    if (endpoint == Endpoint::kChat) {
      std::string text;
      try {
        text = chat_prompt(*job);
      } catch (const Error& e) {
        throw ApiError(400, std::string("chat template: ") + e.what(), "messages", "chat_template");
      }
      job->reasoning = reasoning_format(model_->chat_template());
      // reasoning_format "none": think tags stay in the text; harmony's channels are still read.
      if (r.reasoning_inline && think_tags(job->reasoning)) job->reasoning = ReasoningFormat::kNone;
      job->reasoning_open = prompt_opens_think(text, job->reasoning);
      job->prompt = model_->encode(text, /*add_special=*/false);
    } else if (r.prompt_is_ids) {
      const int64_t vocab = model_->vocab_size();
      for (int32_t id : r.prompt_ids)
        if (id >= vocab)
          throw ApiError(400,
                         "'prompt': token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(vocab),
                         "prompt", "invalid_value");
      job->prompt = r.prompt_ids;
    } else {
      job->prompt = model_->encode(r.prompt_text, /*add_special=*/true);
    }
    if (job->prompt.empty()) throw ApiError(400, "the prompt is empty", "prompt", "invalid_value");
    const auto P = static_cast<int64_t>(job->prompt.size());
    const int64_t ctx = pool_->context();
    if (P > ctx)
      throw ApiError(
          413,
          "the prompt has " + std::to_string(P) + " tokens; a session's context holds " + std::to_string(ctx),
          endpoint == Endpoint::kChat ? "messages" : "prompt", "context_length_exceeded");
    for (const auto& [id, bias] : r.sampling.logit_bias)
      if (id >= model_->vocab_size())
        throw ApiError(400,
                       "'logit_bias': token " + std::to_string(id) + " is outside the vocabulary of " +
                           std::to_string(model_->vocab_size()),
                       "logit_bias", "invalid_value");
    if (!r.guidance_type.empty()) {  // a schema or grammar that does not compile is the client's error
      const char* what = r.tools.any() ? "tool_choice" : "response_format";
      if (!guidance_available())
        throw ApiError(400,
                       std::string("'") + what + "': this build of nbits has no constrained decoding (" +
                           guidance_engine() + ")",
                       what, "unsupported");
      const std::string why = model_->check_guidance(r.guidance_type, r.guidance_data);
      const char* param = r.tools.any() ? "tools" : "response_format";
      if (!why.empty()) throw ApiError(400, std::string("'") + param + "': " + why, param, "invalid_schema");
    }
    // Speculation: the request's choice, else the server's.
    const std::string spec = r.speculative.empty() ? opt_.speculative : r.speculative;
    if (spec == "draft" && !draft_)
      throw ApiError(
          400, "'speculative': \"draft\" needs a draft model; this server was started without --draft-model",
          "speculative", "unsupported");
    job->speculative = spec == "off" ? "" : spec;
    // The session's sequence (prompt + reply) fits its context.
    const int64_t room = ctx - P;
    job->max_tokens = std::min(r.max_tokens.value_or(room), room);
  } catch (const ApiError& e) {
    send_error(res, e);
    return;
  } catch (const Error& e) {
    send_error(res, ApiError(400, e.what()));
    return;
  }
  if (!pool_->admit()) {
    ++m_.rejected_busy;
    send_error(res, ApiError(503,
                             "all " + std::to_string(pool_->size()) + " sessions are busy and " +
                                 std::to_string(opt_.queue) + " requests are waiting: try again later",
                             "", "server_busy", "server_error"));
    res.set_header("Retry-After", "1");
    return;
  }
  job->pool = pool_.get();
  job->id = new_id(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-");
  job->created = static_cast<int64_t>(std::time(nullptr));
  // Non-stream responses are chunked too: the JSON value is written when it is complete, with a
  // blank before it every 250 ms while it is generated (for proxies that time out idle replies).
  const char* type = job->req.stream ? "text/event-stream" : "application/json; charset=utf-8";
  if (job->req.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
  }
  res.set_stream(type, [this, job](ResponseWriter& sink) { run_job(*job, sink); });
}

std::string Server::chat_prompt(Job& job) {
  GenRequest& r = job.req;
  if (!r.tools.any()) return model_->apply_chat_template(r.messages, /*add_generation_prompt=*/true);
  if (!r.guidance_type.empty())
    throw ApiError(400, "'response_format' and a tool call cannot be asked for together", "response_format",
                   "unsupported");
  job.tool_format = tool_format(model_->chat_template());
  // A marker that is one special token of the model: the grammar names the token (its text alone
  // could only be spelled with other tokens).
  auto marker = [this](std::string_view mk) {
    const int32_t id = model_->token_to_id(mk);
    if (id >= 0 && model_->decode(std::vector<int32_t>{id}, /*skip_special=*/true).empty())
      return "<[" + std::to_string(id) + "]>";
    return json(std::string(mk)).dump();
  };
  // auto: the grammar keeps a call the model starts well formed. Without an engine, or with
  // schemas the engine (or the grammar: serve/schema_string_regex.h) cannot carry, such a reply
  // goes unconstrained (parsed only); a required call's schemas must be carried (400).
  const bool is_auto = r.tools.choice == ToolRequest::Choice::kAuto;
  std::string grammar, carry_error;
  try {
    grammar = tool_call_grammar(r.tools, job.tool_format, marker);
  } catch (const Error& e) {
    if (!is_auto) throw ApiError(400, std::string("'tools': ") + e.what(), "tools", "invalid_schema");
    carry_error = e.what();
  }
  bool constrain = !grammar.empty() || !carry_error.empty();
  if (constrain && is_auto) {
    const std::string why = !carry_error.empty()   ? carry_error
                            : guidance_available() ? model_->check_guidance("lark", grammar)
                                                   : "no constrained decoding in this build";
    if (!why.empty()) {
      std::fprintf(stderr, "nbits serve: tool_choice \"auto\" is not constrained: %s\n", why.c_str());
      constrain = false;
    }
  }
  if (constrain) {
    r.guidance_type = "lark";
    r.guidance_data = grammar;
  }
  // The template presents the tools itself (DeepSeek-R1's distills write calls in history but
  // do not present tools: a system text does, in their format).
  if (job.tool_format != ToolFormat::kGeneric && template_presents_tools(model_->chat_template()))
    return model_->apply_chat_template(r.messages, /*add_generation_prompt=*/true, r.tools.tools.dump());
  std::vector<ChatMessage> msgs = r.messages;
  const std::string intro = tools_prompt(r.tools, job.tool_format);
  if (!msgs.empty() && msgs[0].role == "system")
    msgs[0].content += "\n\n" + intro;
  else
    msgs.insert(msgs.begin(), ChatMessage{"system", intro});
  return model_->apply_chat_template(msgs, /*add_generation_prompt=*/true);
}

void Server::run_job(Job& job, ResponseWriter& sink) {
  const GenRequest& r = job.req;
  const bool chat = r.endpoint == Endpoint::kChat;
  bool ok = true;
  auto last_write = Clock::now();
  auto write = [&](const std::string& s) {
    if (ok && !sink.write(s)) ok = false;
    last_write = Clock::now();
    return ok;
  };
  // The client is still there: the read outstanding on its socket saw no EOF (so between two
  // prefill chunks too) and the last write succeeded.
  auto alive = [&] {
    if (ok && sink.client_gone()) ok = false;
    return ok;
  };
  // While nothing else is written: a blank (JSON) or an SSE comment (kept for proxies and
  // clients that time out a silent reply).
  auto heartbeat = [&] {
    if (alive() && Clock::now() - last_write >= std::chrono::milliseconds(250))
      write(r.stream ? ": ping\n\n" : " ");
    return ok;
  };
  // The server is going down: what this request gets instead of the rest of its reply.
  auto shutdown_error = [&] {
    const ApiError err(503, "the server is shutting down", "", "shutting_down", "server_error");
    write(r.stream ? sse(err.body()) + "data: [DONE]\n\n" : dump(err.body()));
  };
  if (r.stream && chat)
    write(sse(chunk(job, {{"index", 0},
                          {"delta", {{"role", "assistant"}, {"content", ""}}},
                          {"logprobs", nullptr},
                          {"finish_reason", nullptr}})));
  const SlotPool::Acquired slot = pool_->acquire(job.prompt, [&] { return heartbeat() && !stopping_; });
  if (slot.slot < 0) {
    ++m_.cancelled;
    if (ok && stopping_) shutdown_error();
    return;
  }
  Generator& g = pool_->generator(slot.slot);
  const auto P = static_cast<int64_t>(job.prompt.size());
  // Reuse the common prefix; at least the last prompt token runs, for its logits.
  const int64_t cached = std::min(slot.common, P - 1);
  std::vector<int32_t> generated;
  std::string text, finish = "length";
  std::optional<ToolCallStream> tool_stream;  // the request has tools: the reply may hold calls
  // Harmony replies carry their calls in their channels (ReplyChannels), other formats in the text.
  const bool harmony = job.reasoning == ReasoningFormat::kHarmony;
  if (r.tools.any() && !harmony) tool_stream.emplace(job.tool_format, tool_names(r.tools), r.tools.tools);
  ReplyChannels channels(job.reasoning, job.reasoning_open);
  std::string reasoning;  // non-stream: the reply's reasoning_content
  std::vector<ToolCall> calls;
  // logprobs: each generated token's, sent with the chunk that follows it (stream) or whole.
  std::optional<TokenLogprobs> lp;
  if (r.logprobs >= 0)
    lp.emplace(r.logprobs, [this](int32_t prev, int32_t id) {
      const std::string one = model_->decode(std::vector<int32_t>{prev}, false);
      std::string both = model_->decode(std::vector<int32_t>{prev, id}, false);
      return both.compare(0, one.size(), one) == 0 ? both.substr(one.size())
                                                   : model_->decode(std::vector<int32_t>{id}, false);
    });
  size_t lp_sent = 0;
  SpeculationStats spec0;  // the session's speculation counts before this reply
  bool failed = false, shut = false;
  try {
    const auto t0 = Clock::now();
    GenerationOptions go = generation_options(r);
    // logprobs: each token its own step (no drafts; a constrained reply's forced tokens too), so
    // that every token has its logits.
    go.speculative = r.logprobs >= 0 ? "" : job.speculative;
    go.fast_forward = r.logprobs < 0;
    if (job.speculative == "draft") go.draft_model = draft_;
    go.draft_max = opt_.draft_max;
    g.set_options(go);
    spec0 = g.speculation_stats();
    g.rewind_to(cached);
    // Prefill in chunks, each an exclusive turn: other sessions' decode steps run between
    // them, and a client that has gone (or a shutdown) stops the prompt at the next chunk.
    const auto chunk_len = static_cast<size_t>(std::max<int64_t>(opt_.prefill_chunk, 1));
    const std::span<const int32_t> rest =
        std::span<const int32_t>(job.prompt).subspan(static_cast<size_t>(cached));
    // The last prompt token runs as a step of its own, as it does when a session holds the rest of
    // the prompt: a prefill row and a one-row step differ in rounding (attention's summation
    // order), so a seeded sampled reply would otherwise depend on what the session held before.
    std::vector<std::span<const int32_t>> pieces;
    for (size_t pos = 0; pos + 1 < rest.size(); pos += chunk_len)
      pieces.push_back(rest.subspan(pos, std::min(chunk_len, rest.size() - 1 - pos)));
    pieces.push_back(rest.last(1));
    for (const std::span<const int32_t> piece : pieces) {
      if (!alive()) break;
      if (stopping_) {
        shut = true;
        break;
      }
      {
        const Turns::Turn turn = turns_.prefill();
        g.append_tokens(piece);
      }
      m_.prefill_tokens += piece.size();
      ++m_.prefill_chunks;
      heartbeat();
    }
    const auto t1 = Clock::now();
    m_.prefill_us +=
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
    // A prefill stopped early (client gone, shutdown) skips the reply; the slot keeps what it ran.
    // With tools, special tokens stay in the text: a call's marker may be one.
    // Harmony's channel markers are special tokens, which ReplyChannels reads and drops.
    TokenStream detok(model_, /*skip_special=*/!tool_stream.has_value() && !harmony);
    for (int32_t id : job.prompt) detok.push(id);  // the first word's leading space, as in context
    StopText stop(r.stop);
    auto logprobs_since = [&]() -> json {
      if (!lp) return nullptr;
      json j = lp->to_json(chat, lp_sent);
      lp_sent = lp->size();
      return j;
    };
    auto send_calls = [&](size_t from) {  // stream: each call once complete, arguments in one piece
      for (size_t i = from; r.stream && i < calls.size(); ++i) {
        calls[i].id = new_id("call_");
        json delta = {
            {"tool_calls",
             json::array({{{"index", i},
                           {"id", calls[i].id},
                           {"type", "function"},
                           {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}}})}};
        write(sse(chunk(
            job,
            {{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}})));
      }
    };
    auto emit = [&](const std::string& raw, bool last = false) {
      // Reasoning leaves as reasoning_content; harmony's calls as tool_calls.
      ReplyChannels::Piece parts = channels.push(raw);
      if (last) {
        ReplyChannels::Piece held = channels.finish();
        parts.reasoning += held.reasoning;
        parts.content += held.content;
        parts.calls.insert(parts.calls.end(), held.calls.begin(), held.calls.end());
      }
      if (r.reasoning_inline || !chat) {  // reasoning inline: before the answer, as content
        std::string merged = std::move(parts.reasoning);
        merged += parts.content;
        parts.content = std::move(merged);
        parts.reasoning.clear();
      }
      if (!parts.reasoning.empty()) {
        if (r.stream)
          write(sse(chunk(job, {{"index", 0},
                                {"delta", {{"reasoning_content", parts.reasoning}}},
                                {"logprobs", nullptr},
                                {"finish_reason", nullptr}})));
        else
          reasoning += parts.reasoning;
      }
      if (!parts.calls.empty() && r.tools.any()) {
        const size_t before = calls.size();
        calls.insert(calls.end(), parts.calls.begin(), parts.calls.end());
        send_calls(before);
      }
      std::string piece = std::move(parts.content);
      if (tool_stream) {  // text that may be a call is held; complete calls leave as tool_calls
        const size_t before = calls.size();
        piece = tool_stream->push(piece, calls);
        if (last) piece += tool_stream->finish(calls);
        send_calls(before);
      }
      if (piece.empty()) return;
      if (!r.stream) {
        text += piece;
        return;
      }
      json choice = chat ? json{{"index", 0},
                                {"delta", {{"content", piece}}},
                                {"logprobs", logprobs_since()},
                                {"finish_reason", nullptr}}
                         : json{{"index", 0},
                                {"text", piece},
                                {"logprobs", logprobs_since()},
                                {"finish_reason", nullptr}};
      write(sse(chunk(job, std::move(choice))));
    };
    DecodeBatcher::Member decoding(batcher_);
    while (!shut && alive() && static_cast<int64_t>(generated.size()) < job.max_tokens && !g.is_done()) {
      if (aborting_) {
        shut = true;
        break;
      }
      decoding.step(g);  // g.generate_next_token(), batched with the other sessions' steps
      const int32_t tok = g.next_token();
      if (model_->is_eos(tok)) {
        finish = "stop";
        break;
      }
      const int32_t prev = generated.empty() ? job.prompt.back() : generated.back();
      generated.push_back(tok);
      const std::string piece = detok.push(tok);
      if (lp) lp->add(g.logits(), prev, tok, piece);
      emit(stop.push(piece));
      if (stop.stopped()) {
        finish = "stop";
        break;
      }
      if (!r.stream) heartbeat();
    }
    if (!stop.stopped() && !shut) {
      emit(stop.push(detok.flush()));
      if (!stop.stopped()) emit(stop.flush());
    }
    emit("", /*last=*/true);  // the held text: a call, reasoning or content
    if (!calls.empty() && finish == "stop") finish = "tool_calls";
    const SpeculationStats spec1 = g.speculation_stats();
    m_.spec_steps += static_cast<uint64_t>(spec1.steps - spec0.steps);
    m_.spec_verify_steps += static_cast<uint64_t>(spec1.verify_steps - spec0.verify_steps);
    m_.spec_drafted += static_cast<uint64_t>(spec1.drafted - spec0.drafted);
    m_.spec_accepted += static_cast<uint64_t>(spec1.accepted - spec0.accepted);
    m_.decode_us += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t1).count());
  } catch (const std::exception& e) {
    failed = true;
    g.reset();
    ++m_.errors;
    const ApiError err(500, std::string("generation failed: ") + e.what());
    write(r.stream ? sse(err.body()) + "data: [DONE]\n\n" : dump(err.body()));
  }
  pool_->release(slot.slot, failed ? std::vector<int32_t>{} : g.sequence());
  if (failed) return;
  const auto C = static_cast<int64_t>(generated.size());
  m_.completion_tokens += static_cast<uint64_t>(C);
  m_.prompt_tokens += static_cast<uint64_t>(P);
  m_.cached_tokens += static_cast<uint64_t>(cached);
  if (!ok || shut) {
    ++m_.cancelled;
    if (ok) shutdown_error();
    return;
  }
  const json usage = usage_json(P, C, cached);
  if (r.stream) {
    json last = chat ? json{{"index", 0},
                            {"delta", json::object()},
                            {"logprobs", lp ? lp->to_json(true, lp_sent) : json(nullptr)},
                            {"finish_reason", finish}}
                     : json{{"index", 0},
                            {"text", ""},
                            {"logprobs", lp ? lp->to_json(false, lp_sent) : json(nullptr)},
                            {"finish_reason", finish}};
    if (r.return_token_ids) last["token_ids"] = generated;
    std::string out = sse(chunk(job, std::move(last)));
    if (r.include_usage) {
      json u = chunk(job, nullptr);
      u["choices"] = json::array();
      u["usage"] = usage;
      out += sse(u);
    }
    out += "data: [DONE]\n\n";
    write(out);
    return;
  }
  json message = {{"role", "assistant"}, {"content", text}};
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  if (!calls.empty()) {
    json tc = json::array();
    for (ToolCall& c : calls) {
      c.id = new_id("call_");
      tc.push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    message["tool_calls"] = std::move(tc);
    size_t b = text.find_first_not_of(" \n\r\t");
    message["content"] = b == std::string::npos ? json(nullptr) : json(text.substr(b));
  }
  const json logprobs = lp ? lp->to_json(chat) : json(nullptr);
  json choice = chat ? json{{"index", 0},
                            {"message", std::move(message)},
                            {"logprobs", logprobs},
                            {"finish_reason", finish}}
                     : json{{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish}};
  if (r.return_token_ids) choice["token_ids"] = generated;
  json body = {{"id", job.id},
               {"object", chat ? "chat.completion" : "text_completion"},
               {"created", job.created},
               {"model", model_id_},
               {"choices", json::array({std::move(choice)})},
               {"usage", usage}};
  if (r.return_token_ids) body["prompt_token_ids"] = job.prompt;
  write(dump(body));
}

std::string Server::metrics_text() const {
  std::string out;
  auto line = [&](const char* name, const char* type, const char* help, double v, const char* labels = "") {
    char buf[256];
    std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n%s%s %.17g\n", name, help, name, type, name,
                  labels, v);
    out += buf;
  };
  auto d = [](const std::atomic<uint64_t>& a) { return static_cast<double>(a.load()); };
  out +=
      "# HELP nbits_requests_total Generation requests received, by endpoint.\n"
      "# TYPE nbits_requests_total counter\n";
  out += "nbits_requests_total{endpoint=\"chat\"} " + std::to_string(m_.requests_chat.load()) + "\n";
  out += "nbits_requests_total{endpoint=\"completions\"} " + std::to_string(m_.requests_completions.load()) +
         "\n";
  line("nbits_request_errors_total", "counter", "Requests answered with an error.", d(m_.errors));
  line("nbits_requests_rejected_total", "counter", "Requests refused because the queue was full.",
       d(m_.rejected_busy));
  line("nbits_requests_cancelled_total", "counter", "Generations stopped because the client went away.",
       d(m_.cancelled));
  line("nbits_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", d(m_.prompt_tokens));
  line("nbits_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a session's cache.",
       d(m_.cached_tokens));
  line("nbits_requests_rejected_connections_total", "counter",
       "Connections answered 503 because --connections were open.", d(m_.rejected_connections));
  line("nbits_prefill_tokens_total", "counter", "Prompt tokens run through the model.", d(m_.prefill_tokens));
  line("nbits_prefill_chunks_total", "counter", "Prefill steps (--prefill-chunk tokens at most).",
       d(m_.prefill_chunks));
  line("nbits_completion_tokens_total", "counter", "Generated tokens.", d(m_.completion_tokens));
  line("nbits_prefill_seconds_total", "counter", "Time spent in prefill.", d(m_.prefill_us) * 1e-6);
  line("nbits_decode_seconds_total", "counter", "Time spent generating.", d(m_.decode_us) * 1e-6);
  line("nbits_decode_batch_steps_total", "counter", "Batched decode steps (one model pass each).",
       static_cast<double>(batcher_.steps()));
  line("nbits_decode_batch_rows_total", "counter",
       "Session decode steps run in them (rows / steps: batch size).", static_cast<double>(batcher_.rows()));
  line("nbits_speculative_steps_total", "counter",
       "Model steps of speculative replies after their first token (verify or plain).", d(m_.spec_steps));
  line("nbits_speculative_verify_steps_total", "counter", "Of those, steps that verified a draft.",
       d(m_.spec_verify_steps));
  line("nbits_speculative_drafted_tokens_total", "counter", "Draft tokens verified.", d(m_.spec_drafted));
  line("nbits_speculative_accepted_tokens_total", "counter", "Draft tokens that were the model's own choice.",
       d(m_.spec_accepted));
  line("nbits_slots", "gauge", "Session slots.", pool_ ? pool_->size() : 0);
  line("nbits_slots_busy", "gauge", "Session slots generating now.", pool_ ? pool_->active() : 0);
  line("nbits_requests_waiting", "gauge", "Requests waiting for a slot.", pool_ ? pool_->waiting() : 0);
  return out;
}

void Server::tokenize(const HttpRequest& req, HttpResponse& res) {
  const json b = parse_body(req.body);
  auto c = b.find("content");
  if (c == b.end() || !c->is_string())
    throw ApiError(400, "'content' must be a string", "content", "invalid_value");
  bool add_special = false;
  if (auto a = b.find("add_special"); a != b.end() && !a->is_null()) {
    if (!a->is_boolean())
      throw ApiError(400, "'add_special' must be a boolean", "add_special", "invalid_value");
    add_special = a->get<bool>();
  }
  res.set_content(dump({{"tokens", model_->encode(c->get<std::string>(), add_special)}}), "application/json");
}

void Server::detokenize(const HttpRequest& req, HttpResponse& res) {
  const json b = parse_body(req.body);
  auto t = b.find("tokens");
  if (t == b.end() || !t->is_array())
    throw ApiError(400, "'tokens' must be an array", "tokens", "invalid_value");
  std::vector<int32_t> ids;
  const int64_t vocab = model_->vocab_size();
  for (const auto& x : *t) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= vocab)
      throw ApiError(400, "'tokens' must hold token ids in [0, " + std::to_string(vocab) + ")", "tokens",
                     "invalid_value");
    ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  res.set_content(dump({{"content", model_->decode(ids)}}), "application/json");
}

// Every request, on a worker thread (serve/http_server.h).
void Server::route(const HttpRequest& req, HttpResponse& res) {
  const std::string& m = req.method;
  const std::string& path = req.path;
  if (m == "OPTIONS" && !opt_.cors.empty()) {
    // A CORS preflight (sent without credentials): the methods and headers a browser client uses.
    res.status = 204;
    res.content_type.clear();
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.set_header("Access-Control-Max-Age", "86400");
    return;
  }
  if (m == "GET" && path == "/health") {
    if (ready_) {
      res.set_content(R"({"status":"ok"})", "application/json");
    } else {
      res.status = 503;
      res.set_content(R"({"status":"loading"})", "application/json");
    }
    return;
  }
  if (m == "GET" && (path == "/" || path == "/index.html") && opt_.webui) {
    // The page itself needs no key (it holds no data); it asks for one when the API answers 401.
    res.set_header("Cache-Control", "no-cache");
    return res.set_content(std::string(chat_page()), "text/html; charset=utf-8");
  }
  if (m == "POST" && path == "/v1/chat/completions") return handle_generate(req, res, Endpoint::kChat);
  if (m == "POST" && path == "/v1/completions") return handle_generate(req, res, Endpoint::kCompletions);
  if (m == "GET" && path == "/metrics") {
    if (!authorized(req, res)) return;
    return res.set_content(metrics_text(), "text/plain; version=0.0.4");
  }
  const std::string model_prefix = "/v1/models/";
  const bool models = m == "GET" && (path == "/v1/models" || path.rfind(model_prefix, 0) == 0);
  const bool tok = m == "POST" && (path == "/tokenize" || path == "/detokenize");
  if (!models && !tok) return send_error(res, ApiError(404, "no route " + m + " " + path, "", "not_found"));
  ++m_.requests_other;
  if (!authorized(req, res) || !ready(res)) return;
  try {
    if (path == "/tokenize") return tokenize(req, res);
    if (path == "/detokenize") return detokenize(req, res);
    const json model = {{"id", model_id_},
                        {"object", "model"},
                        {"created", created_},
                        {"owned_by", "nbits"},
                        {"context_length", pool_->context()}};
    if (path == "/v1/models")
      return res.set_content(dump({{"object", "list"}, {"data", json::array({model})}}), "application/json");
    const std::string id = path.substr(model_prefix.size());
    if (id != model_id_)
      throw ApiError(404, "the model '" + id + "' does not exist", "model", "model_not_found");
    res.set_content(dump(model), "application/json");
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const Error& e) {
    send_error(res, ApiError(400, e.what()));
  }
}

// What the HTTP layer answers itself: malformed requests, bodies over --max-body, connections
// beyond --connections, a route that threw.
void Server::refusal(Refusal why, const std::string& detail, HttpResponse& res) {
  switch (why) {
    case Refusal::kBadRequest:
      send_error(res, ApiError(400, "bad request (HTTP 400): " + detail));
      break;
    case Refusal::kBodyTooLarge:
      send_error(res, ApiError(413, "the request body is larger than " + std::to_string(opt_.max_body_bytes) +
                                        " bytes"));
      break;
    case Refusal::kTooManyConnections:
      ++m_.rejected_connections;
      send_error(res, ApiError(503,
                               "too many connections: " + std::to_string(connections_) +
                                   " are open, try again later",
                               "", "too_many_connections", "server_error"));
      res.set_header("Retry-After", "1");
      break;
    case Refusal::kInternal:
      send_error(res, ApiError(500, "internal error: " + detail));
      break;
  }
}

int Server::run() {
  // SIGINT/SIGTERM go to one thread (sigwait) that stops the listener; SIGPIPE is ignored
  // (a client that has gone is a failed write, not a signal).
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  std::filesystem::path p(opt_.model);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  if (p.filename() == "model.onnx") p = p.parent_path();
  model_id_ = !opt_.model_id.empty()     ? opt_.model_id
              : p.extension() == ".gguf" ? p.stem().string()
                                         : p.filename().string();
  created_ = static_cast<int64_t>(std::time(nullptr));

  HttpServerOptions ho;
  connections_ = opt_.connections > 0 ? opt_.connections : opt_.parallel + opt_.queue + 4;
  ho.max_connections = connections_;
  // Every admitted generation holds a worker (parallel + queue); a few more run the other routes.
  ho.workers = opt_.parallel + opt_.queue + 4;
  ho.max_body_bytes = opt_.max_body_bytes;
  if (!opt_.cors.empty())
    ho.default_headers = {{"Access-Control-Allow-Origin", opt_.cors},
                          {"Access-Control-Expose-Headers", "Retry-After"},
                          {"Vary", "Origin"}};
  http_ = std::make_unique<HttpServer>(
      ho, [this](const HttpRequest& req, HttpResponse& res) { route(req, res); },
      [this](Refusal why, const std::string& detail, HttpResponse& res) { refusal(why, detail, res); });
  const int port = http_->listen(opt_.host, opt_.port);
  const std::string url = "http://" + opt_.host + ":" + std::to_string(port);
  std::printf("nbits serve: listening on %s (loading the model)\n", url.c_str());
  std::fflush(stdout);
  http_->start();
  std::thread([this, sigs] {
    int sig = 0;
    sigwait(&sigs, &sig);
    std::fprintf(stderr,
                 "nbits serve: signal %d: finishing the replies in flight; waiting and prefilling requests "
                 "end (again: stop every reply)\n",
                 sig);
    stopping_ = true;
    http_->stop();
    sigwait(&sigs, &sig);
    std::fprintf(stderr, "nbits serve: signal %d: stopping every reply (again: exit now)\n", sig);
    aborting_ = true;
    sigwait(&sigs, &sig);
    std::_Exit(128 + sig);
  }).detach();

  try {
    ModelOptions mo;
    mo.threads = opt_.threads;
    mo.context = opt_.ctx;
    mo.fp16_scales = opt_.fp16_scales;
    mo.requantize_float = opt_.requantize_float;
    mo.variant = opt_.variant;
    mo.guidance_mask_ms = opt_.guidance_mask_ms;
    mo.guidance_grammar_size = opt_.guidance_grammar_size;
    mo.kv_cache = opt_.kv_cache == "f16"   ? ModelOptions::KvCache::kF16
                  : opt_.kv_cache == "f32" ? ModelOptions::KvCache::kF32
                  : opt_.kv_cache == "q8"  ? ModelOptions::KvCache::kQ8
                                           : ModelOptions::KvCache::kModel;
    auto model = Model::load(opt_.model, mo);
    if (!model->has_tokenizer()) throw Error(opt_.model + " has no tokenizer.json: the server needs one");
    model_ = model;
    if (!opt_.draft_model.empty()) {
      draft_ = Model::load(opt_.draft_model, mo);
      GenerationOptions go;  // refuses a draft of another vocabulary now, not at the first request
      go.speculative = "draft";
      go.draft_model = draft_;
      go.context = 1;
      Generator check(model_, go);
    }
    if (opt_.speculative == "draft" && !draft_) throw Error("--spec draft needs --draft-model FILE");
    pool_ = std::make_unique<SlotPool>(model_, opt_.parallel, opt_.ctx, opt_.queue);
  } catch (...) {
    http_->stop();
    http_->wait();
    throw;
  }
  ready_ = true;  // before the "ready" line: whoever reads it may call at once
  const size_t kv = pool_->kv_cache_bytes();
  std::printf("nbits serve: model %s (%s, vocabulary %lld, %.1f MiB of weights)\n", model_id_.c_str(),
              model_->model_type().c_str(), static_cast<long long>(model_->vocab_size()),
              mib(model_->weight_bytes()));
  std::printf(
      "nbits serve: %d session%s x %lld tokens of context (%.1f MiB KV cache each); memory %.1f MiB "
      "weights + %d x %.1f MiB = %.1f MiB\n",
      pool_->size(), pool_->size() == 1 ? "" : "s", static_cast<long long>(pool_->context()),
      mib(kv / static_cast<size_t>(pool_->size())), mib(model_->weight_bytes()), pool_->size(),
      mib(kv / static_cast<size_t>(pool_->size())), mib(model_->weight_bytes() + kv));
  if (opt_.speculative != "off" || draft_)
    std::printf(
        "nbits serve: speculative decoding %s for requests that do not choose (\"speculative\": "
        "off|lookup%s), drafts of up to %lld tokens%s%s\n",
        opt_.speculative.c_str(), draft_ ? "|draft" : "", static_cast<long long>(opt_.draft_max),
        draft_ ? "; draft model " : "", draft_ ? opt_.draft_model.c_str() : "");
  std::printf("nbits serve: queue %d, prefill chunk %lld, %d connections, %s%s%s; ready: %s/v1%s%s%s\n",
              opt_.queue, static_cast<long long>(opt_.prefill_chunk), connections_,
              opt_.api_key.empty() ? "no API key" : "API key required", opt_.cors.empty() ? "" : ", CORS ",
              opt_.cors.c_str(), url.c_str(), opt_.webui ? ", chat page: " : "",
              opt_.webui ? url.c_str() : "", opt_.webui ? "/" : "");
  std::fflush(stdout);
  http_->wait();
  return 0;
}

}  // namespace

int run_server(const ServeOptions& options) {
  Server s(options);
  return s.run();
}

}  // namespace nbits::serve
