// GGUF vocabularies as tokenizer.json descriptions: the vocab is written as the equivalent
// Hugging Face tokenizer.json (and tokenizer_config.json) and loaded by Tokenizer::from_json, so
// both formats run the same loader checks, BPE and decoders.
#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/error.h"

namespace nbits {
namespace {

using nlohmann::json;

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4;

// llama.cpp's split regexes per tokenizer.ggml.pre (llama-vocab.cpp, llm_tokenizer_bpe), applied
// one after the other, each to every piece the previous one produced; unmatched text stays a piece.
const char* kGpt2Re = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* kLlama3Re =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Re =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Tekken (Mistral Nemo / Small 3 / Ministral 3) and o200k (gpt-4o: Phi-4-mini): the regexes of their
// tokenizer.json, with o200k's (?i:'s|...) spelled out. llama.cpp's own engine lacks the letter
// categories and approximates "not lowercase" as [^a-z] over letters; this one has them, so
// non-ASCII capitals split as Hugging Face splits them.
const char* kTekkenRe =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kO200kRe = R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
                       R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
                       R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
                       R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
                       R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreRule {
  std::vector<std::string> regexes;
  bool ignore_merges = false;
  bool add_bos =
      false;  // llama.cpp's default for this pre-tokenizer (tokenizer.ggml.add_bos_token overrides)
};

PreRule pre_rule(const std::string& pre) {
  if (pre.empty() || pre == "default")
    return {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Re, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false, false};
  if (pre == "gpt-2" || pre == "phi-2" || pre == "mpt" || pre == "olmo") return {{kGpt2Re}, false, false};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell" ||
      pre == "exaone" || pre == "minerva-7b")
    return {{R"(\p{N})", kGpt2Re}, false, false};
  if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "stablelm2" || pre == "megrez")
    return {{kQwen2Re}, false, false};
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3")
    return {{kLlama3Re}, true, true};
  // cl100k-style vocabularies (DBRX, OLMo 2 / 3's dolma2 tokenizer, Smaug): llama 3's split, merges only.
  if (pre == "dbrx" || pre == "smaug-bpe") return {{kLlama3Re}, false, false};
  if (pre == "tekken") return {{kTekkenRe}, true, true};
  // DeepSeek Coder, and DeepSeek V3 / R1 and Hunyuan's split (llama.cpp's regex lists, applied in turn).
  if (pre == "deepseek-coder")
    return {
        {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", R"(\p{N})"},
        false,
        false};
  if (pre == "deepseek-v3" || pre == "hunyuan-dense")
    return {
        {R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
         R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
        false,
        false};
  if (pre == "gpt-4o" || pre == "llama4") return {{kO200kRe}, false, false};
  fail("GGUF vocab: unsupported tokenizer.ggml.pre '", pre,
       "' (supported: default, gpt-2, phi-2, mpt, olmo, smollm, starcoder, refact, command-r, codeshell, "
       "exaone, "
       "minerva-7b, qwen2, deepseek-r1-qwen, stablelm2, megrez, llama3, llama-v3, llama-bpe, falcon3, dbrx, "
       "smaug-bpe, tekken, gpt-4o, llama4, deepseek-coder, deepseek-v3, hunyuan-dense)");
}

int32_t type_of(const GgufVocab& v, size_t id) { return v.token_types.empty() ? kNormal : v.token_types[id]; }

std::string token_name(const GgufVocab& v, const std::optional<int32_t>& id, const char* what) {
  if (!id) return "";
  if (*id < 0 || static_cast<size_t>(*id) >= v.tokens.size())
    fail("GGUF vocab: tokenizer.ggml.", what, "_token_id ", *id, " is out of range (", v.tokens.size(),
         " tokens)");
  return v.tokens[static_cast<size_t>(*id)];
}

// Hugging Face's SentencePiece-to-BPE conversion: every split of a piece into two pieces is a merge,
// ranked by the merged piece's score (highest first; equal scores keep vocabulary order, and the
// splits of one piece are ordered by the ids of their halves).
json merges_from_scores(const GgufVocab& v) {
  std::unordered_map<std::string_view, int32_t> id_of;
  id_of.reserve(v.tokens.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) id_of.emplace(v.tokens[i], static_cast<int32_t>(i));
  struct M {
    float score;
    int32_t left, right;
  };
  std::vector<M> all;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& p = v.tokens[i];
    size_t first = all.size();
    for (size_t cut = 1; cut < p.size(); ++cut) {
      if ((static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80) continue;  // split on characters
      auto l = id_of.find(std::string_view(p).substr(0, cut));
      auto r = id_of.find(std::string_view(p).substr(cut));
      if (l != id_of.end() && r != id_of.end()) all.push_back({v.scores[i], l->second, r->second});
    }
    std::sort(all.begin() + static_cast<std::ptrdiff_t>(first), all.end(),
              [](const M& a, const M& b) { return a.left != b.left ? a.left < b.left : a.right < b.right; });
  }
  std::stable_sort(all.begin(), all.end(), [](const M& a, const M& b) { return a.score > b.score; });
  json merges = json::array();
  for (const M& m : all)
    merges.push_back(
        json::array({v.tokens[static_cast<size_t>(m.left)], v.tokens[static_cast<size_t>(m.right)]}));
  return merges;
}

json post_processor(const GgufVocab& v, bool add_bos, bool add_eos) {
  if (!add_bos && !add_eos) return nullptr;
  json single = json::array(), specials = json::object();
  auto special = [&](const std::optional<int32_t>& id, const char* what) {
    if (!id)
      fail("GGUF vocab: tokenizer.ggml.add_", what, "_token is true but tokenizer.ggml.", what,
           "_token_id is not set");
    std::string name = token_name(v, id, what);
    single.push_back({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
    specials[name] = {{"id", name}, {"ids", json::array({*id})}, {"tokens", json::array({name})}};
  };
  if (add_bos) special(v.bos, "bos");
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (add_eos) special(v.eos, "eos");
  return {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
}

}  // namespace

Tokenizer tokenizer_from_gguf(const GgufVocab& v) {
  const bool spm = v.model == "llama";
  if (v.model != "gpt2" && !spm)
    fail("GGUF vocab: unsupported tokenizer.ggml.model '", v.model,
         "' (supported: gpt2 = byte-level BPE, llama = SentencePiece)");
  if (v.tokens.empty()) fail("GGUF vocab: tokenizer.ggml.tokens is empty");
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size())
    fail("GGUF vocab: tokenizer.ggml.token_type has ", v.token_types.size(), " entries for ", v.tokens.size(),
         " tokens");
  if (!v.scores.empty() && v.scores.size() != v.tokens.size())
    fail("GGUF vocab: tokenizer.ggml.scores has ", v.scores.size(), " entries for ", v.tokens.size(),
         " tokens");

  json vocab = json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    auto [it, fresh] = vocab.emplace(v.tokens[i], static_cast<int32_t>(i));
    if (!fresh)
      fail("GGUF vocab: token ", i, " repeats token ", it->get<int32_t>(),
           " (duplicate token strings are not supported)");
  }
  json added = json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    int32_t t = type_of(v, i);
    if ((t == kUnknown || t == kControl || t == kUserDefined) && !v.tokens[i].empty())
      added.push_back({{"id", static_cast<int32_t>(i)},
                       {"content", v.tokens[i]},
                       {"special", t != kUserDefined},
                       {"normalized", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"single_word", false}});
  }

  json tj = json::object();
  tj["added_tokens"] = added;
  json model = {{"type", "BPE"}, {"vocab", vocab}};
  bool add_bos, add_eos = v.add_eos.value_or(false);
  if (spm) {
    if (v.scores.empty()) fail("GGUF vocab: a SentencePiece (llama) vocabulary needs tokenizer.ggml.scores");
    bool space_prefix = v.add_space_prefix.value_or(true);
    add_bos = v.add_bos.value_or(true);
    json norm = json::array();
    if (space_prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}});
    norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}});
    tj["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
    tj["pre_tokenizer"] = nullptr;
    model["merges"] = merges_from_scores(v);
    model["byte_fallback"] = true;
    model["fuse_unk"] = true;
    std::optional<int32_t> unk = v.unk;
    if (!unk)
      for (size_t i = 0; i < v.tokens.size() && !unk; ++i)
        if (type_of(v, i) == kUnknown) unk = static_cast<int32_t>(i);
    if (unk) model["unk_token"] = token_name(v, unk, "unknown");
    json dec =
        json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}});
    if (space_prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    tj["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
  } else {
    if (v.merges.empty()) fail("GGUF vocab: a byte-level BPE (gpt2) vocabulary needs tokenizer.ggml.merges");
    PreRule rule = pre_rule(v.pre);
    add_bos = v.add_bos.value_or(rule.add_bos);
    json pre = json::array();
    for (const std::string& re : rule.regexes)
      pre.push_back(
          {{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
    pre.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
    tj["normalizer"] = nullptr;
    tj["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", pre}};
    model["merges"] = v.merges;
    model["ignore_merges"] = rule.ignore_merges;
    tj["decoder"] = {{"type", "ByteLevel"}};
  }
  tj["model"] = std::move(model);
  tj["post_processor"] = post_processor(v, add_bos, add_eos);

  json config = json::object();
  if (v.bos) config["bos_token"] = token_name(v, v.bos, "bos");
  if (v.eos) config["eos_token"] = token_name(v, v.eos, "eos");
  if (!v.chat_template.empty()) config["chat_template"] = v.chat_template;

  std::string tj_text, config_text;
  try {
    tj_text = tj.dump();
    config_text = config.dump();
  } catch (const json::exception&) {
    fail("GGUF vocab: a token, merge or the chat template is not valid UTF-8");
  }
  return Tokenizer::from_json(tj_text, config_text,
                              "GGUF vocab (" + v.model + (spm ? "" : "/" + v.pre) + ")");
}

}  // namespace nbits
