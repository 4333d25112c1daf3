// Guidance room: constrained decoding. A Spec (a JSON schema, any JSON object, a regex or a Lark
// grammar) becomes an llm::TokenConstraint that the Sampler draws through, so every reply matches
// it. The engine is llguidance (rust/llguidance, built by cmake/room_guidance.cmake); where it was
// not built every entry point but available() / engine() throws a clear nbits::Error.
//
//   auto vocab = guidance::make_vocabulary(tokenizer, vocab_size, eos_ids);   // once per model
//   sampler.set_constraint(guidance::make_constraint(vocab, guidance::make_spec("json_schema", s)));
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "llm/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace nbits::guidance {

enum class Kind { kJsonSchema, kJsonObject, kRegex, kLark };

struct Spec {
  Kind kind = Kind::kJsonObject;
  std::string data;  // the schema, regex or grammar text (ignored for kJsonObject)
};

// type: "json_schema" (or "json"), "json_object", "regex", "lark"; throws on another name.
Spec make_spec(std::string_view type, std::string data);
const char* kind_name(Kind kind);  // the type name make_spec takes

// Whether this build has a constrained-decoding engine; engine() names it ("llguidance 1.9.1")
// or says why there is none.
bool available();
std::string engine();

// The engine's index of a model's vocabulary (a token trie: ~0.1 s for 150k tokens), built once
// per model and shared by every constraint and thread. `tokenizer` must outlive it and them.
class Vocabulary {
 public:
  virtual ~Vocabulary() = default;
};
// The engine's budgets, for every constraint of a vocabulary (0: llguidance's default). mask_ms:
// the work one token's mask may take, in milliseconds of llguidance's lexer and parser at their
// rated speeds (its defaults, 200,000 lexer fuel and 50,000 Earley items, are about 14 ms and
// 2.5 ms); a spec whose mask needs more fails with the engine's message. grammar_size: the most
// symbols a spec may compile to (default 500,000: a few megabytes of schema).
struct Limits {
  double mask_ms = 0;
  int64_t grammar_size = 0;
};

// vocab_size: the model's logits width (>= the tokenizer's; ids past it are never allowed).
// eos_ids: the tokens that end a reply (a grammar that is complete allows only these).
std::shared_ptr<const Vocabulary> make_vocabulary(const Tokenizer& tokenizer, int64_t vocab_size,
                                                  std::span<const int32_t> eos_ids,
                                                  const Limits& limits = {});

// A constraint for one reply. Compiling is bounded by the engine's limits (grammar size, lexer
// fuel); a spec that does not compile throws nbits::Error("invalid json_schema: <why>"). The
// first mask is computed on the constraint's own thread from here on, and each later one while
// the model computes the step it is for.
std::shared_ptr<llm::TokenConstraint> make_constraint(std::shared_ptr<const Vocabulary> vocab,
                                                      const Spec& spec);
// The same compile check without a constraint: "" when the spec compiles, else the message.
std::string check(const Vocabulary& vocab, const Spec& spec);

}  // namespace nbits::guidance
