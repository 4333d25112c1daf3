// One message of a conversation, as chat templates see it.
#pragma once

#include <string>

namespace nbits {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

}  // namespace nbits
