// A minimal, bounds-checked JSON scanner for the large parts of tokenizer.json (model.vocab and
// model.merges), which nlohmann::json parses too slowly for a 300 ms load budget.
#pragma once

#include <string>
#include <string_view>

namespace nbits::tok {

class JsonScan {
 public:
  // origin names the file in error messages.
  JsonScan(std::string_view text, std::string origin) : s_(text), origin_(std::move(origin)) {}

  void ws();
  bool peek(char c);                   // after whitespace, is the next character c?
  void expect(char c);                 // after whitespace, consumes c or throws
  bool eat(char c);                    // after whitespace, consumes c if present
  std::string string();                // parses a JSON string (escapes decoded)
  void string_into(std::string& out);  // same, into out (cleared first)
  long long integer();                 // parses a JSON integer
  std::string_view skip();             // skips any JSON value, returns its text
  bool at_end() {
    ws();
    return i_ >= s_.size();
  }
  [[noreturn]] void bad(const std::string& what) const;

 private:
  std::string_view s_;
  std::string origin_;
  size_t i_ = 0;
};

}  // namespace nbits::tok
