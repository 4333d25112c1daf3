// Chat prompts: renders a conversation with the model's Jinja chat template (as transformers'
// apply_chat_template does) or with a built-in format chosen by name.
//
//   std::string prompt = nbits::render_chat(tok, {{"user", "Hello!"}}, /*add_generation_prompt=*/true);
//   std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/false);
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nbits/chat_message.h"
#include "tokenizer/tokenizer.h"

namespace nbits {

// Renders messages. format: nullopt (or "auto") uses the tokenizer's chat template; otherwise one
// of builtin_chat_formats(). Throws nbits::Error if there is no template, the format is unknown,
// the template uses an unsupported construct, or it raises an exception.
// tools_json: "" or a JSON array of OpenAI tool objects, the template's `tools` variable.
std::string render_chat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::optional<std::string>& format = std::nullopt,
                        const std::string& tools_json = "");

// Renders an arbitrary chat template with bos/eos tokens given explicitly.
std::string render_chat_template(const std::string& chat_template, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, const std::string& bos_token,
                                 const std::string& eos_token, const std::string& tools_json = "");

// A message as templates see it (transformers' dicts): role, content, an assistant's reasoning
// as both reasoning_content (Qwen3, DeepSeek, GLM) and thinking (gpt-oss), its tool_calls ({id,
// type, function: {name, arguments}}, the arguments parsed when they are JSON), a tool result's
// tool_call_id and name.
nlohmann::ordered_json chat_message_json(const ChatMessage& m);

// Names accepted as format: chatml, qwen2.5, zephyr (alias tinyllama), llama2.
std::vector<std::string> builtin_chat_formats();
// Template text of a built-in format; throws nbits::Error naming the choices if unknown.
const std::string& builtin_chat_template(const std::string& name);

}  // namespace nbits
