// One message of a conversation, as chat templates see it.
#pragma once

#include <string>
#include <vector>

namespace nbits {

// A function call an assistant message made (OpenAI's tool_calls[i]).
struct ToolCall {
  std::string id;         // "call_..." (templates that show it)
  std::string name;       // function.name
  std::string arguments;  // function.arguments: JSON text (templates see it parsed when it is JSON)
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::string reasoning = {};  // assistant: its reasoning (a client's reasoning_content / thinking)
  std::vector<ToolCall> tool_calls = {};  // assistant: the calls it made
  std::string tool_call_id = {};          // tool: the call this result answers
  std::string name = {};                  // tool: the function's name
};

}  // namespace nbits
