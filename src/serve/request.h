// OpenAI request bodies -> what the server runs, with every field checked: a wrong type or
// range is an ApiError naming the field (HTTP 400), never an exception the server did not expect.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nbits/chat_message.h"
#include "serve/tool_calls.h"

namespace nbits::serve {

// A request's sampling knobs, with OpenAI's defaults (temperature 1, nothing else on).
struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax, lowest id on ties)
  int64_t top_k = 0;         // 0 = off
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;                    // HF: over prompt and generated tokens
  float presence_penalty = 0.0f;                      // OpenAI: over generated tokens
  std::vector<std::pair<int32_t, float>> logit_bias;  // OpenAI: {"token id": bias in [-100, 100]}
  float frequency_penalty = 0.0f;
  uint64_t seed = 0;
};

struct ApiError : std::runtime_error {
  ApiError(int status_, std::string message, std::string param_ = "", std::string code_ = "",
           std::string type_ = "")
      : std::runtime_error(message),
        status(status_),
        param(std::move(param_)),
        code(std::move(code_)),
        type(std::move(type_)) {}
  int status;
  std::string param, code, type;
  // {"error":{"message","type","param","code"}}
  nlohmann::json body() const;
};

enum class Endpoint { kChat, kCompletions };

struct GenRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                  // "" when not given
  std::vector<ChatMessage> messages;  // chat
  std::string prompt_text;            // completions: text ...
  std::vector<int32_t> prompt_ids;    // ... or token ids (prompt_is_ids)
  bool prompt_is_ids = false;
  std::optional<int64_t> max_tokens;  // max_completion_tokens, else max_tokens
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  bool return_token_ids = false;  // nbits extension: choices[0].token_ids
  int logprobs = -1;              // >= 0: each generated token's logprob and this many alternatives
  // response_format json_object / json_schema: GenerationOptions::guidance_type / _data ("" = text).
  std::string guidance_type, guidance_data;
  ToolRequest tools;  // chat: tools, tool_choice, parallel_tool_calls
  // nbits extension "speculative": "off" | "lookup" | "draft" (the server's --draft-model);
  // "" = the server's --spec.
  std::string speculative;
  // llama-server's "reasoning_format": "none" leaves a reply's reasoning in its content (think
  // tags kept; harmony's analysis text before the answer); "auto" / "deepseek" (default) give it
  // as reasoning_content.
  bool reasoning_inline = false;
};

// Deeper request bodies are refused before they are parsed.
constexpr size_t kMaxBodyDepth = 256;
// Throws ApiError(400) for a body that is not a JSON object, or one nested deeper than kMaxBodyDepth.
nlohmann::json parse_body(const std::string& body);
// raw_body: the body's text, from which a JSON schema is taken with its keys in the client's order
// (the order a reply's properties follow); nlohmann::json sorts them.
GenRequest parse_gen_request(const nlohmann::json& body, Endpoint endpoint, std::string_view raw_body = {});

}  // namespace nbits::serve
