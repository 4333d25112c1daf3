// Chat prompt rendering with Jinja templates (see chat.h).
#include "tokenizer/chat.h"

#include <map>

#include "base/error.h"
#include "base/json_depth.h"
#include "tokenizer/jinja.h"

namespace nbits {
namespace {

const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> m = {
      {"chatml",
       "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
       "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% "
       "endif %}"},
      {"qwen2.5",
       "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
       "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You "
       "are a "
       "helpful assistant.<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}{%- if not "
       "(message.role == "
       "'system' and loop.first) %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
       "'<|im_end|>' + "
       "'\\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- "
       "endif %}"},
      {"zephyr",
       "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
       "message['content'] + "
       "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + "
       "eos_token "
       "}}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + "
       "eos_token }}\n"
       "{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% "
       "endfor %}"},
      {"llama2",
       "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message "
       "= "
       "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
       "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 "
       "== 0) %}"
       "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif "
       "%}"
       "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message "
       "+ "
       "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif "
       "%}"
       "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
       "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
       "{% endfor %}"},
  };
  return m;
}

}  // namespace

std::vector<std::string> builtin_chat_formats() {
  return {"chatml", "qwen2.5", "zephyr", "tinyllama", "llama2"};
}

const std::string& builtin_chat_template(const std::string& name) {
  const auto& m = builtins();
  auto it = m.find(name == "tinyllama" ? "zephyr" : name);
  if (it == m.end())
    fail("unknown chat format '", name, "' (choose auto, chatml, qwen2.5, zephyr, tinyllama, llama2)");
  return it->second;
}

nlohmann::ordered_json chat_message_json(const ChatMessage& m) {
  nlohmann::ordered_json j = {{"role", m.role}, {"content", m.content}};
  if (!m.reasoning.empty()) {
    j["reasoning_content"] = m.reasoning;
    j["thinking"] = m.reasoning;
  }
  if (!m.tool_calls.empty()) {
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const ToolCall& c : m.tool_calls) {
      nlohmann::ordered_json args =
          json_nesting_depth(c.arguments, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth
              ? nlohmann::ordered_json()
              : nlohmann::ordered_json::parse(c.arguments, nullptr, false);
      if (args.is_discarded() || args.is_null()) args = c.arguments;
      nlohmann::ordered_json call = nlohmann::ordered_json::object();
      if (!c.id.empty()) call["id"] = c.id;
      call["type"] = "function";
      call["function"] = {{"name", c.name}, {"arguments", args}};
      calls.push_back(std::move(call));
    }
    j["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) j["name"] = m.name;
  return j;
}

std::string render_chat_template(const std::string& chat_template, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, const std::string& bos_token,
                                 const std::string& eos_token, const std::string& tools_json) {
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& m : messages) list.push_back(chat_message_json(m));
  ctx["messages"] = std::move(list);
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = bos_token;
  ctx["eos_token"] = eos_token;
  if (!tools_json.empty()) {
    NBITS_CHECK(json_nesting_depth(tools_json, kMaxOrderedJsonDepth) <= kMaxOrderedJsonDepth,
                "chat template: tools nest deeper than ", kMaxOrderedJsonDepth, " levels");
    nlohmann::ordered_json tools = nlohmann::ordered_json::parse(tools_json, nullptr, false);
    NBITS_CHECK(tools.is_array(), "chat template: tools must be a JSON array of tool objects");
    ctx["tools"] = std::move(tools);
  }
  return jinja::Template(chat_template).render(ctx);
}

std::string render_chat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::optional<std::string>& format,
                        const std::string& tools_json) {
  const std::string* tmpl;
  if (!format || *format == "auto") {
    if (tokenizer.chat_template().empty())
      fail(
          "the tokenizer has no chat template (tokenizer_config.json chat_template or chat_template.jinja); "
          "choose a chat format: chatml, qwen2.5, zephyr, tinyllama, llama2");
    tmpl = &tokenizer.chat_template();
  } else {
    tmpl = &builtin_chat_template(*format);
  }
  return render_chat_template(*tmpl, messages, add_generation_prompt, tokenizer.bos_token(),
                              tokenizer.eos_token(), tools_json);
}

}  // namespace nbits
