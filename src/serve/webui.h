// nbits serve's chat page (src/serve/webui/chat.html), embedded in the binary at build time by
// tools/embed_file.py: GET / serves it unless --no-webui.
#pragma once

#include <string_view>

namespace nbits::serve {

std::string_view chat_page();

}  // namespace nbits::serve
