#include "serve/request.h"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <random>

#include "base/json_depth.h"

namespace nbits::serve {

using nlohmann::json;

json ApiError::body() const {
  std::string t = type;
  if (t.empty()) t = status >= 500 ? "server_error" : "invalid_request_error";
  json e = {{"message", what()}, {"type", t}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  e["code"] = code.empty() ? json(nullptr) : json(code);
  return json{{"error", std::move(e)}};
}

json parse_body(const std::string& body) {
  // nlohmann's dump and conversions recurse once per level: a hostile body nested thousands deep
  // would overflow a worker's stack (seen under ASan with a 5000-deep schema).
  if (json_nesting_depth(body, kMaxBodyDepth) > kMaxBodyDepth)
    throw ApiError(400, "the request body nests deeper than " + std::to_string(kMaxBodyDepth) + " levels", "",
                   "invalid_json");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON (UTF-8)", "", "invalid_json");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
  return j;
}

namespace {

// The field, or nullptr when absent or null (OpenAI treats null as not given).
const json* field(const json& o, const char* name) {
  auto it = o.find(name);
  if (it == o.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw ApiError(400, "'" + name + "' " + what, name, "invalid_value");
}

std::optional<double> number(const json& o, const char* name, double lo, double hi) {
  const json* v = field(o, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(name, "must be a number");
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) bad(name, "must be in [" + json(lo).dump() + ", " + json(hi).dump() + "]");
  return x;
}

std::optional<int64_t> integer(const json& o, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(o, name);
  if (!v) return std::nullopt;
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d != static_cast<double>(static_cast<int64_t>(d))) bad(name, "must be an integer");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      bad(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<int64_t>(d);
  }
  if (v->is_number_unsigned()) {
    const auto u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi))
      bad(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<int64_t>(u);
  }
  if (!v->is_number_integer()) bad(name, "must be an integer");
  const auto x = v->get<int64_t>();
  if (x < lo || x > hi) bad(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

std::optional<bool> boolean(const json& o, const char* name) {
  const json* v = field(o, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(name, "must be a boolean");
  return v->get<bool>();
}

// "content": a string, or an array of {"type":"text","text":...} parts.
std::string message_content(const json& m, const std::string& where) {
  const json* c = field(m, "content");
  if (!c) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) bad(where + ".content", "must be a string or an array of text parts");
  std::string out;
  for (const auto& part : *c) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string())
      bad(where + ".content",
          "parts must be {\"type\": \"text\", \"text\": \"...\"} (only text is supported)");
    out += part["text"].get<std::string>();
  }
  return out;
}

void refuse_truthy(const json& o, const char* name, const char* why) {
  const json* v = field(o, name);
  if (!v) return;
  const bool empty = (v->is_boolean() && !v->get<bool>()) || (v->is_number() && v->get<double>() == 0) ||
                     ((v->is_array() || v->is_object()) && v->empty());
  if (!empty)
    throw ApiError(400, std::string("'") + name + "' is not supported: " + why, name, "unsupported");
}

// An assistant message's tool_calls: [{id, type: "function", function: {name, arguments}}], the
// arguments a JSON string (as OpenAI sends them) or an object.
std::vector<ToolCall> message_tool_calls(const json& tc, const std::string& where) {
  if (!tc.is_array()) bad(where, "must be an array");
  std::vector<ToolCall> out;
  for (size_t i = 0; i < tc.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const json& c = tc[i];
    const json* fn = c.is_object() ? field(c, "function") : nullptr;
    if (!fn || !fn->is_object()) bad(w + ".function", "must be an object with name and arguments");
    const json* name = field(*fn, "name");
    if (!name || !name->is_string()) bad(w + ".function.name", "must be a string");
    ToolCall call;
    call.name = name->get<std::string>();
    if (const json* a = field(*fn, "arguments"))
      call.arguments = a->is_string() ? a->get<std::string>() : a->dump();
    if (const json* id = field(c, "id"); id && id->is_string()) call.id = id->get<std::string>();
    out.push_back(std::move(call));
  }
  return out;
}

// tools, tool_choice, parallel_tool_calls. The tools are read from the body's text (raw_body,
// when given) so that their parameters keep the client's key order (templates print them).
void parse_tools(const json& b, std::string_view raw_body, ToolRequest& t) {
  const json* tools = field(b, "tools");
  if (tools) {
    if (!tools->is_array()) bad("tools", "must be an array of {\"type\": \"function\", \"function\": {...}}");
    const bool shallow = json_nesting_depth(raw_body, kMaxOrderedJsonDepth) <= kMaxOrderedJsonDepth;
    const nlohmann::ordered_json ordered = raw_body.empty() || !shallow
                                               ? nlohmann::ordered_json(*tools)
                                               : nlohmann::ordered_json::parse(raw_body, nullptr, false)
                                                     .value("tools", nlohmann::ordered_json());
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string w = "tools[" + std::to_string(i) + "]";
      const json& tool = (*tools)[i];
      if (!tool.is_object() || tool.value("type", json()) != "function")
        bad(w + ".type", "must be \"function\"");
      const json* fn = field(tool, "function");
      if (!fn || !fn->is_object()) bad(w + ".function", "must be an object");
      const json* name = field(*fn, "name");
      if (!name || !name->is_string() || name->get<std::string>().empty() ||
          name->get<std::string>().size() > 64)
        bad(w + ".function.name", "must be a name of 1 to 64 characters");
      for (char c : name->get<std::string>())
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
          bad(w + ".function.name", "may hold letters, digits, '_' and '-' only");
      if (const json* p = field(*fn, "parameters"); p && !p->is_object())
        bad(w + ".function.parameters", "must be a JSON schema object");
      for (const auto& prev : t.tools)
        if (prev["function"]["name"] == name->get<std::string>()) bad(w + ".function.name", "is given twice");
      t.tools.push_back(ordered.is_array() && i < ordered.size() ? ordered[i] : nlohmann::ordered_json(tool));
    }
  }
  if (const json* c = field(b, "tool_choice")) {
    if (c->is_string()) {
      const std::string v = c->get<std::string>();
      if (v == "auto")
        t.choice = ToolRequest::Choice::kAuto;
      else if (v == "none")
        t.choice = ToolRequest::Choice::kNone;
      else if (v == "required")
        t.choice = ToolRequest::Choice::kRequired;
      else
        bad("tool_choice", "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", ...}");
    } else if (c->is_object() && field(*c, "function") && (*c)["function"].is_object() &&
               (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
      t.choice = ToolRequest::Choice::kNamed;
      t.named = (*c)["function"]["name"].get<std::string>();
      bool known = false;
      for (const auto& tool : t.tools) known = known || tool["function"]["name"] == t.named;
      if (!known) bad("tool_choice", "names '" + t.named + "', which is not among the tools");
    } else {
      bad("tool_choice",
          "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": "
          "...}}");
    }
    if ((t.choice == ToolRequest::Choice::kRequired || t.choice == ToolRequest::Choice::kNamed) &&
        t.tools.empty())
      bad("tool_choice", "asks for a call but no tools are given");
  }
  t.parallel = boolean(b, "parallel_tool_calls").value_or(true);
}

// OpenAI's response_format: {"type": "text"}, {"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"name", "description", "schema", "strict"}}; as llama-server, json_object may
// carry a "schema" too. The schema is compiled later, against the model's vocabulary.
void parse_response_format(const json& rf, GenRequest& r) {
  if (!rf.is_object()) bad("response_format", "must be an object");
  const json* type = field(rf, "type");
  if (!type || !type->is_string())
    bad("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\"");
  const std::string t = type->get<std::string>();
  const json* schema = nullptr;
  if (t == "text") return;
  if (t == "json_object") {
    schema = field(rf, "schema");
  } else if (t == "json_schema") {
    const json* js = field(rf, "json_schema");
    if (!js || !js->is_object()) bad("response_format.json_schema", "must be an object with the schema");
    if (const json* n = field(*js, "name"); n && !n->is_string())
      bad("response_format.json_schema.name", "must be a string");
    if (const json* st = field(*js, "strict"); st && !st->is_boolean())
      bad("response_format.json_schema.strict", "must be a boolean");
    schema = field(*js, "schema");
    if (!schema) schema = field(rf, "schema");
    if (!schema) bad("response_format.json_schema.schema", "is missing");
  } else {
    bad("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\" (got \"" + t + "\")");
  }
  if (!schema) {
    r.guidance_type = "json_object";
    return;
  }
  if (!schema->is_object() && !schema->is_boolean())
    bad("response_format.json_schema.schema", "must be a JSON schema object");
  r.guidance_type = "json_schema";
  r.guidance_data = schema->dump();
}

// The schema of response_format as the client wrote it (keys in order), from the body's text.
std::string ordered_schema(std::string_view raw_body) {
  if (json_nesting_depth(raw_body, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth)
    return "";  // llguidance refuses it
  const auto b = nlohmann::ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  if (!b.is_object() || !b.contains("response_format")) return "";
  const auto& rf = b["response_format"];
  if (!rf.is_object()) return "";
  if (rf.contains("json_schema") && rf["json_schema"].is_object() && rf["json_schema"].contains("schema"))
    return rf["json_schema"]["schema"].dump();
  if (rf.contains("schema")) return rf["schema"].dump();
  return "";
}

}  // namespace

GenRequest parse_gen_request(const json& b, Endpoint endpoint, std::string_view raw_body) {
  GenRequest r;
  r.endpoint = endpoint;
  if (const json* m = field(b, "model")) {
    if (!m->is_string()) bad("model", "must be a string");
    r.model = m->get<std::string>();
  }
  if (endpoint == Endpoint::kChat) {
    const json* msgs = field(b, "messages");
    if (!msgs) throw ApiError(400, "'messages' is required", "messages", "missing_field");
    if (!msgs->is_array() || msgs->empty()) bad("messages", "must be a non-empty array");
    for (size_t i = 0; i < msgs->size(); ++i) {
      const json& m = (*msgs)[i];
      const std::string where = "messages[" + std::to_string(i) + "]";
      if (!m.is_object()) bad(where, "must be an object");
      const json* role = field(m, "role");
      if (!role || !role->is_string()) bad(where + ".role", "must be a string");
      std::string rs = role->get<std::string>();
      if (rs == "developer") rs = "system";
      if (rs != "system" && rs != "user" && rs != "assistant" && rs != "tool")
        bad(where + ".role", "must be system, user, assistant or tool (got '" + rs + "')");
      ChatMessage cm{rs, message_content(m, where)};
      if (const json* tc = field(m, "tool_calls")) {
        if (rs != "assistant") bad(where + ".tool_calls", "belongs to an assistant message");
        cm.tool_calls = message_tool_calls(*tc, where + ".tool_calls");
      }
      // An assistant's reasoning, which templates show on the turns of a tool loop (llama-server's
      // reasoning_content; gpt-oss clients send thinking).
      for (const char* key : {"reasoning_content", "thinking"}) {
        const json* rc = field(m, key);
        if (!rc || rc->is_null()) continue;
        if (rs != "assistant") bad(where + "." + key, "belongs to an assistant message");
        if (!rc->is_string()) bad(where + "." + key, "must be a string");
        if (cm.reasoning.empty()) cm.reasoning = rc->get<std::string>();
      }
      if (rs == "tool") {
        const json* id = field(m, "tool_call_id");
        if (id && !id->is_string()) bad(where + ".tool_call_id", "must be a string");
        if (id) cm.tool_call_id = id->get<std::string>();
        if (const json* n = field(m, "name"); n && n->is_string()) cm.name = n->get<std::string>();
      }
      r.messages.push_back(std::move(cm));
    }
    parse_tools(b, raw_body, r.tools);
  } else {
    const json* p = field(b, "prompt");
    if (!p) throw ApiError(400, "'prompt' is required", "prompt", "missing_field");
    if (p->is_string()) {
      r.prompt_text = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt_text = (*p)[0].get<std::string>();
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
      r.prompt_is_ids = true;
      for (const auto& id : *p) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          bad("prompt", "token ids must be non-negative integers");
        r.prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
    } else if (p->is_array() && !p->empty() && ((*p)[0].is_string() || (*p)[0].is_array())) {
      throw ApiError(400, "'prompt': one prompt per request (batches of prompts are not supported)", "prompt",
                     "unsupported");
    } else {
      bad("prompt", "must be a string, an array of one string, or an array of token ids");
    }
    refuse_truthy(b, "echo", "the prompt is not echoed");
    if (const json* s = field(b, "suffix"); s && !(s->is_string() && s->get<std::string>().empty()))
      throw ApiError(400, "'suffix' is not supported", "suffix", "unsupported");
    if (auto bo = integer(b, "best_of", 1, 1 << 20); bo && *bo != 1)
      throw ApiError(400, "'best_of' must be 1", "best_of", "unsupported");
  }
  if (auto n = integer(b, "n", 1, 1 << 20); n && *n != 1)
    throw ApiError(400, "'n' must be 1 (one choice per request)", "n", "unsupported");
  const int64_t big = int64_t{1} << 40;
  r.max_tokens = integer(b, "max_tokens", 1, big);
  if (auto m = integer(b, "max_completion_tokens", 1, big)) r.max_tokens = m;
  SamplingParams& s = r.sampling;
  if (auto t = number(b, "temperature", 0, 100)) s.temperature = static_cast<float>(*t);
  if (auto t = number(b, "top_p", 0, 1)) {
    if (*t == 0) bad("top_p", "must be in (0, 1]");
    s.top_p = static_cast<float>(*t);
  }
  if (auto k = integer(b, "top_k", -1, int64_t{1} << 31)) s.top_k = *k < 0 ? 0 : *k;
  if (auto m = number(b, "min_p", 0, 1)) s.min_p = static_cast<float>(*m);
  if (auto rp = number(b, "repetition_penalty", 0, 100)) {
    if (*rp == 0) bad("repetition_penalty", "must be > 0");
    s.repetition_penalty = static_cast<float>(*rp);
  }
  if (auto pp = number(b, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*pp);
  if (auto fp = number(b, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*fp);
  if (const json* seed = field(b, "seed")) {
    if (!seed->is_number_integer()) bad("seed", "must be an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  } else {
    s.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  if (const json* st = field(b, "stop")) {
    if (st->is_string()) {
      r.stop.push_back(st->get<std::string>());
    } else if (st->is_array()) {
      if (st->size() > 16) bad("stop", "takes at most 16 strings");
      for (const auto& x : *st) {
        if (!x.is_string()) bad("stop", "must be a string or an array of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "must be a string or an array of strings");
    }
  }
  r.stream = boolean(b, "stream").value_or(false);
  if (const json* so = field(b, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "must be an object");
    if (!r.stream) bad("stream_options", "is only allowed with \"stream\": true");
    r.include_usage = boolean(*so, "include_usage").value_or(false);
  }
  r.return_token_ids = boolean(b, "return_token_ids").value_or(false);
  if (const json* sp = field(b, "speculative")) {
    if (!sp->is_string()) bad("speculative", "must be \"off\", \"lookup\" or \"draft\"");
    r.speculative = sp->get<std::string>();
    if (r.speculative != "off" && r.speculative != "lookup" && r.speculative != "draft")
      bad("speculative", "must be \"off\", \"lookup\" or \"draft\"");
  }
  if (const json* rf = field(b, "reasoning_format")) {
    const char* why = "must be \"auto\", \"deepseek\" or \"none\"";
    if (!rf->is_string()) bad("reasoning_format", why);
    const std::string v = rf->get<std::string>();
    if (v != "auto" && v != "deepseek" && v != "none") bad("reasoning_format", why);
    r.reasoning_inline = v == "none";
  }
  // Token logprobs: chat's logprobs (a boolean) + top_logprobs (0..20); completions' logprobs (the
  // number of alternatives, 0..20, as legacy OpenAI and llama-server take it).
  if (endpoint == Endpoint::kChat) {
    if (boolean(b, "logprobs").value_or(false))
      r.logprobs = integer(b, "top_logprobs", 0, 20).value_or(0);
    else if (const json* t = field(b, "top_logprobs"); t && !t->is_null())
      bad("top_logprobs", "needs \"logprobs\": true");
  } else if (const json* lp = field(b, "logprobs"); lp && !lp->is_null()) {
    r.logprobs = integer(b, "logprobs", 0, 20).value_or(-1);
  }
  if (endpoint != Endpoint::kChat) refuse_truthy(b, "tools", "tools belong to /v1/chat/completions");
  refuse_truthy(b, "functions", "the deprecated 'functions' API: give 'tools'");
  if (const json* lb = field(b, "logit_bias"); lb && !lb->is_null()) {
    if (!lb->is_object()) bad("logit_bias", "must be an object of token id -> bias");
    for (const auto& [key, v] : lb->items()) {
      char* end = nullptr;
      const long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id > INT32_MAX)
        bad("logit_bias", "keys are token ids (\"" + key + "\" is not one)");
      if (!v.is_number() || !(v.get<double>() >= -100 && v.get<double>() <= 100))
        bad("logit_bias", "the bias of token " + key + " must be a number in [-100, 100]");
      r.sampling.logit_bias.emplace_back(static_cast<int32_t>(id), v.get<float>());
    }
  }
  if (const json* rf = field(b, "response_format")) {
    parse_response_format(*rf, r);
    if (r.guidance_type == "json_schema" && !raw_body.empty())
      if (std::string ordered = ordered_schema(raw_body); !ordered.empty())
        r.guidance_data = std::move(ordered);
  }
  return r;
}

}  // namespace nbits::serve
