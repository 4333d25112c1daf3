// Loading tokenizer.json / tokenizer_config.json into TokenizerImpl. Every component type or
// option that the encoder does not implement is refused here with a message naming it.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/json_scan.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace nbits {
namespace tok {
namespace {

using nlohmann::json;

const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// model.vocab and model.merges, read by the fast scanner.
struct BigParts {
  bool has_vocab = false, has_merges = false;
  StringMap vocab;
  int64_t max_id = -1;
  std::string merge_arena;                      // "a" "b" of every merge, back to back
  std::vector<std::array<uint32_t, 3>> merges;  // offset, length of a, length of b
  void add_merge(std::string_view a, std::string_view b) {
    merges.push_back({static_cast<uint32_t>(merge_arena.size()), static_cast<uint32_t>(a.size()),
                      static_cast<uint32_t>(b.size())});
    merge_arena.append(a).append(b);
  }
};

// Reads tokenizer.json: model.vocab and model.merges with JsonScan, every other (small) value
// with nlohmann::json into top (and top["model"]).
void scan_tokenizer_json(std::string_view text, const std::string& origin, json& top, BigParts& big) {
  JsonScan sc(text, origin);
  auto parse_small = [&](std::string_view span, const std::string& key) {
    try {
      return json::parse(span);
    } catch (const json::exception& e) {
      fail(origin, ": invalid JSON in \"", key, "\": ", e.what());
    }
  };
  top = json::object();
  sc.expect('{');
  if (!sc.eat('}')) {
    do {
      std::string key = sc.string();
      sc.expect(':');
      if (key != "model" || !sc.peek('{')) {
        top[key] = parse_small(sc.skip(), key);
        continue;
      }
      json model = json::object();
      sc.expect('{');
      if (!sc.eat('}')) {
        do {
          std::string mk = sc.string();
          sc.expect(':');
          if (mk == "vocab" && sc.peek('{')) {
            big.has_vocab = true;
            sc.expect('{');
            big.vocab.reserve(text.size() / 32);
            if (!sc.eat('}')) {
              std::string tok;
              do {
                sc.string_into(tok);
                sc.expect(':');
                long long id = sc.integer();
                if (id < 0 || id >= (int64_t{1} << 30)) fail(origin, ": model.vocab id out of range: ", id);
                big.vocab.insert_or_assign(tok, static_cast<int32_t>(id));
                big.max_id = std::max<int64_t>(big.max_id, id);
              } while (sc.eat(','));
              sc.expect('}');
            }
          } else if (mk == "merges" && sc.peek('[')) {
            big.has_merges = true;
            sc.expect('[');
            if (!sc.eat(']')) {
              std::string a, b;
              do {
                if (sc.peek('"')) {
                  sc.string_into(a);
                  size_t sp = a.find(' ');
                  if (sp == std::string::npos)
                    fail(origin, ": model.merges[", big.merges.size(), "] is not \"a b\"");
                  big.add_merge(std::string_view(a).substr(0, sp), std::string_view(a).substr(sp + 1));
                } else {
                  sc.expect('[');
                  sc.string_into(a);
                  sc.expect(',');
                  sc.string_into(b);
                  sc.expect(']');
                  big.add_merge(a, b);
                }
              } while (sc.eat(','));
              sc.expect(']');
            }
          } else {
            model[mk] = parse_small(sc.skip(), "model." + mk);
          }
        } while (sc.eat(','));
        sc.expect('}');
      }
      top["model"] = std::move(model);
    } while (sc.eat(','));
    sc.expect('}');
  }
  if (!sc.at_end()) sc.bad("trailing data after the top-level object");
}

class Loader {
 public:
  explicit Loader(TokenizerImpl& t) : t_(t) {}

  [[noreturn]] void bad(const std::string& what) { fail(t_.origin, ": ", what); }

  const json& field(const json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) bad(where + " has no \"" + key + "\"");
    return j.at(key);
  }
  std::string str(const json& j, const char* key, const std::string& where) {
    const json& v = field(j, key, where);
    if (!v.is_string()) bad(where + "." + key + " is not a string");
    return v.get<std::string>();
  }
  bool boolean(const json& j, const char* key, bool dflt, const std::string& where) {
    if (!j.contains(key) || j.at(key).is_null()) return dflt;
    if (!j.at(key).is_boolean()) bad(where + "." + key + " is not a boolean");
    return j.at(key).get<bool>();
  }
  std::string type_of(const json& j, const std::string& where) { return str(j, "type", where); }

  void model(const json& m, BigParts& big) {
    std::string type = m.contains("type") ? type_of(m, "model") : "BPE";
    if (type != "BPE") bad("unsupported model type '" + type + "' (only BPE is implemented)");
    if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"] != 0.0 && m["dropout"] != 1.0)
      bad("unsupported model option: BPE dropout");
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (m.contains(k) && !m[k].is_null() && !(m[k].is_string() && m[k].get<std::string>().empty()))
        bad(std::string("unsupported model option: BPE ") + k);
    t_.ignore_merges = boolean(m, "ignore_merges", false, "model");
    t_.fuse_unk = boolean(m, "fuse_unk", false, "model");
    t_.byte_fallback = boolean(m, "byte_fallback", false, "model");
    if (!big.has_vocab) bad("model has no \"vocab\" object");
    if (!big.has_merges) bad("model has no \"merges\" array");
    t_.vocab = std::move(big.vocab);
    t_.id_to_token.assign(static_cast<size_t>(big.max_id + 1), std::string());
    t_.vocab.for_each([&](std::string_view k, int32_t v) { t_.id_to_token[static_cast<size_t>(v)] = k; });
    t_.merges.reserve(big.merges.size());
    std::string_view arena = big.merge_arena;
    for (size_t r = 0; r < big.merges.size(); ++r) {
      auto [off, la, lb] = big.merges[r];
      std::string_view a = arena.substr(off, la), b = arena.substr(off + la, lb),
                       ab = arena.substr(off, la + lb);
      int32_t ia = t_.vocab.find(a), ib = t_.vocab.find(b), iab = t_.vocab.find(ab);
      if (ia < 0 || ib < 0 || iab < 0)
        bad("merge token out of vocabulary in model.merges[" + std::to_string(r) + "]: " + std::string(a) +
            " " + std::string(b));
      t_.merges.insert(ia, ib, static_cast<int32_t>(r), iab);
    }
    if (m.contains("unk_token") && !m["unk_token"].is_null()) {
      if (!m["unk_token"].is_string()) bad("model.unk_token is not a string");
      t_.unk_id = t_.vocab.find(m["unk_token"].get<std::string>());
      if (t_.unk_id < 0) bad("model.unk_token is not in the vocabulary");
    }
    for (int byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", byte);
      t_.byte_fallback_ids[static_cast<size_t>(byte)] = t_.vocab.find(std::string_view(name));
    }
  }

  void added(const json& list) {
    if (list.is_null()) return;
    if (!list.is_array()) bad("added_tokens is not an array");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = "added_tokens[" + std::to_string(i) + "]";
      const json& e = list[i];
      AddedToken a;
      a.content = str(e, "content", where);
      if (a.content.empty()) bad(where + " has empty content");
      const json& id = field(e, "id", where);
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 30))
        bad(where + ".id is not a valid id");
      a.id = id.get<int32_t>();
      a.special = boolean(e, "special", false, where);
      a.lstrip = boolean(e, "lstrip", false, where);
      a.rstrip = boolean(e, "rstrip", false, where);
      a.single_word = boolean(e, "single_word", false, where);
      a.normalized = boolean(e, "normalized", !a.special, where);
      if (a.single_word) bad(where + ": unsupported added-token option single_word");
      t_.added.push_back(a);
    }
  }

  void normalizer(const json& n) {
    if (n.is_null()) return;
    std::string type = type_of(n, "normalizer");
    if (type == "Sequence") {
      const json& list = field(n, "normalizers", "normalizer");
      if (!list.is_array()) bad("normalizer.normalizers is not an array");
      for (const auto& e : list) normalizer(e);
    } else if (type == "NFC") {
      t_.normalizer.push_back({NormStep::kNfc, "", ""});
    } else if (type == "Prepend") {
      t_.normalizer.push_back({NormStep::kPrepend, str(n, "prepend", "Prepend normalizer"), ""});
    } else if (type == "Replace") {
      const json& p = field(n, "pattern", "Replace normalizer");
      if (!p.is_object() || !p.contains("String") || !p["String"].is_string())
        bad("unsupported Replace normalizer pattern (only {\"String\": ...} is implemented)");
      std::string from = p["String"].get<std::string>();
      if (from.empty()) bad("Replace normalizer with an empty pattern");
      t_.normalizer.push_back({NormStep::kReplace, from, str(n, "content", "Replace normalizer")});
    } else {
      bad("unsupported normalizer type '" + type + "'");
    }
  }

  static std::string escape_literal(const std::string& s) {
    std::string r;
    for (char c : s) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x80 && !std::isalnum(u)) r.push_back('\\');
      r.push_back(c);
    }
    return r;
  }

  void pre_tokenizer(const json& p) {
    if (p.is_null()) return;
    std::string type = type_of(p, "pre_tokenizer");
    if (!t_.pre.empty() && t_.pre.back().kind == PreStep::kByteLevel)
      bad("unsupported pre-tokenizer '" + type + "' after ByteLevel");
    if (type == "Sequence") {
      const json& list = field(p, "pretokenizers", "pre_tokenizer");
      if (!list.is_array()) bad("pre_tokenizer.pretokenizers is not an array");
      for (const auto& e : list) pre_tokenizer(e);
    } else if (type == "Split") {
      PreStep s{PreStep::kSplit, {}, false, false, false};
      const json& pat = field(p, "pattern", "Split pre-tokenizer");
      std::string re;
      if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string())
        re = pat["Regex"].get<std::string>();
      else if (pat.is_object() && pat.contains("String") && pat["String"].is_string())
        re = escape_literal(pat["String"].get<std::string>());
      else
        bad("Split pre-tokenizer pattern is neither {\"Regex\": ...} nor {\"String\": ...}");
      try {
        s.re = Regex(re);
      } catch (const Error& e) {
        bad(e.what());
      }
      std::string behavior = str(p, "behavior", "Split pre-tokenizer");
      if (behavior == "Removed")
        s.removed = true;
      else if (behavior != "Isolated")
        bad("unsupported Split pre-tokenizer behavior '" + behavior + "'");
      if (boolean(p, "invert", false, "Split pre-tokenizer"))
        bad("unsupported Split pre-tokenizer option invert");
      t_.pre.push_back(std::move(s));
    } else if (type == "ByteLevel") {
      PreStep s{PreStep::kByteLevel, {}, false, false, false};
      s.flag = boolean(p, "add_prefix_space", true, "ByteLevel pre-tokenizer");
      s.use_regex = boolean(p, "use_regex", true, "ByteLevel pre-tokenizer");
      if (s.use_regex) s.re = Regex(kGpt2Pattern);
      t_.pre.push_back(std::move(s));
      t_.byte_level = true;
    } else if (type == "Digits") {
      PreStep s{PreStep::kDigits, {}, false, false, false};
      s.flag = boolean(p, "individual_digits", false, "Digits pre-tokenizer");
      t_.pre.push_back(std::move(s));
    } else {
      bad("unsupported pre-tokenizer type '" + type + "'");
    }
  }

  void post_processor(const json& p) {
    if (p.is_null()) return;
    std::string type = type_of(p, "post_processor");
    if (type == "Sequence") {
      const json& list = field(p, "processors", "post_processor");
      if (!list.is_array()) bad("post_processor.processors is not an array");
      for (const auto& e : list) post_processor(e);
    } else if (type == "ByteLevel") {
      // Only adjusts offsets: ids are unchanged.
    } else if (type == "TemplateProcessing") {
      if (!t_.post.empty()) bad("more than one TemplateProcessing post-processor");
      const json& single = field(p, "single", "TemplateProcessing");
      const json& specials = p.contains("special_tokens") ? p["special_tokens"] : json::object();
      if (!single.is_array()) bad("TemplateProcessing.single is not an array");
      for (const auto& item : single) {
        PostItem pi;
        if (item.contains("Sequence")) {
          pi.sequence = true;
          if (str(item["Sequence"], "id", "TemplateProcessing sequence") != "A")
            bad("TemplateProcessing.single refers to a sequence other than A");
        } else if (item.contains("SpecialToken")) {
          std::string name = str(item["SpecialToken"], "id", "TemplateProcessing special token");
          if (!specials.contains(name)) bad("TemplateProcessing special token '" + name + "' is not defined");
          const json& ids = field(specials[name], "ids", "TemplateProcessing special_tokens." + name);
          if (!ids.is_array()) bad("TemplateProcessing special_tokens." + name + ".ids is not an array");
          for (const auto& id : ids) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 30))
              bad("TemplateProcessing special_tokens." + name + " has an invalid id");
            pi.ids.push_back(id.get<int32_t>());
          }
        } else {
          bad("TemplateProcessing.single item is neither Sequence nor SpecialToken");
        }
        t_.post.push_back(std::move(pi));
      }
    } else {
      bad("unsupported post-processor type '" + type + "'");
    }
  }

  void decoder(const json& d) {
    if (d.is_null()) return;
    t_.has_decoder = true;
    std::string type = type_of(d, "decoder");
    if (type == "Sequence") {
      const json& list = field(d, "decoders", "decoder");
      if (!list.is_array()) bad("decoder.decoders is not an array");
      for (const auto& e : list) decoder(e);
    } else if (type == "ByteLevel") {
      t_.decoder.push_back({DecStep::kByteLevel, "", "", 0, 0, true});
    } else if (type == "Replace") {
      const json& p = field(d, "pattern", "Replace decoder");
      if (!p.is_object() || !p.contains("String") || !p["String"].is_string() ||
          p["String"].get<std::string>().empty())
        bad("unsupported Replace decoder pattern (only a non-empty {\"String\": ...} is implemented)");
      t_.decoder.push_back({DecStep::kReplace, p["String"].get<std::string>(),
                            str(d, "content", "Replace decoder"), 0, 0, true});
    } else if (type == "ByteFallback") {
      t_.decoder.push_back({DecStep::kByteFallback, "", "", 0, 0, true});
    } else if (type == "Fuse") {
      t_.decoder.push_back({DecStep::kFuse, "", "", 0, 0, true});
    } else if (type == "Strip") {
      std::string content = str(d, "content", "Strip decoder");
      if (decode_utf8(content).size() != 1) bad("Strip decoder content is not one character");
      const json& start = field(d, "start", "Strip decoder");
      const json& stop = field(d, "stop", "Strip decoder");
      if (!start.is_number_unsigned() || !stop.is_number_unsigned())
        bad("Strip decoder start/stop are not counts");
      t_.decoder.push_back({DecStep::kStrip, content, "", start.get<size_t>(), stop.get<size_t>(), true});
    } else {
      bad("unsupported decoder type '" + type + "'");
    }
  }

  void classify_stream() {
    const auto& d = t_.decoder;
    if (!t_.has_decoder) return;  // kWhole
    if (d.size() == 1 && d[0].kind == DecStep::kByteLevel) {
      t_.stream_kind = StreamKind::kByteLevel;
      return;
    }
    // (Replace)* [ByteFallback] [Fuse [Strip(start, 0)]]
    size_t i = 0;
    while (i < d.size() && d[i].kind == DecStep::kReplace) ++i;
    if (i < d.size() && d[i].kind == DecStep::kByteFallback) ++i;
    if (i < d.size() && d[i].kind == DecStep::kFuse) {
      ++i;
      if (i < d.size() && d[i].kind == DecStep::kStrip && d[i].stop == 0) ++i;
    }
    if (i == d.size()) t_.stream_kind = StreamKind::kPieces;
  }

  void finish_added() {
    size_t n = t_.id_to_token.size();
    for (const auto& a : t_.added) n = std::max(n, static_cast<size_t>(a.id) + 1);
    t_.id_to_token.resize(n);
    t_.special.assign(n, 0);
    for (size_t i = 0; i < t_.added.size(); ++i) {
      const AddedToken& a = t_.added[i];
      auto& slot = t_.id_to_token[static_cast<size_t>(a.id)];
      if (!slot.empty() && slot != a.content)
        bad("added token id " + std::to_string(a.id) + " is already used by another vocabulary entry");
      slot = a.content;
      t_.special[static_cast<size_t>(a.id)] = a.special;
      t_.normed_content.push_back(a.normalized ? t_.normalize(a.content) : a.content);
      (a.normalized ? t_.normed_added : t_.plain_added).push_back(static_cast<int32_t>(i));
    }
    for (const auto& p : t_.post)
      for (int32_t id : p.ids)
        if (static_cast<size_t>(id) >= n) bad("post-processor id " + std::to_string(id) + " is out of range");
    if (t_.byte_level) {
      for (int b = 0; b < 256; ++b) {
        std::string ch;
        append_utf8(ch, byte_level_char(static_cast<uint8_t>(b)));
        t_.byte_level_ids[static_cast<size_t>(b)] = t_.vocab.find(ch);
        t_.byte_level_chars[static_cast<size_t>(b)] = ch;
      }
    }
  }

  void config(const json& c) {
    auto token_of = [&](const char* key) -> std::string {
      if (!c.contains(key) || c[key].is_null()) return "";
      const json& v = c[key];
      if (v.is_string()) return v.get<std::string>();
      if (v.is_object() && v.contains("content") && v["content"].is_string())
        return v["content"].get<std::string>();
      bad(std::string("tokenizer_config.json: ") + key + " is neither a string nor {\"content\": ...}");
    };
    t_.bos_token = token_of("bos_token");
    t_.eos_token = token_of("eos_token");
    auto id_of = [&](const std::string& s) {
      if (s.empty()) return -1;
      for (const auto& a : t_.added)
        if (a.content == s) return a.id;
      return t_.vocab.find(s);
    };
    t_.bos_id = id_of(t_.bos_token);
    t_.eos_id = id_of(t_.eos_token);
    if (c.contains("chat_template") && !c["chat_template"].is_null()) {
      const json& ct = c["chat_template"];
      if (ct.is_string()) {
        t_.chat_template = ct.get<std::string>();
      } else if (ct.is_array()) {
        for (const auto& e : ct)
          if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
              e["template"].is_string())
            t_.chat_template = e["template"].get<std::string>();
        if (t_.chat_template.empty())
          bad("tokenizer_config.json: chat_template list has no \"default\" entry");
      } else {
        bad("tokenizer_config.json: chat_template is neither a string nor a list");
      }
    }
  }

 private:
  TokenizerImpl& t_;
};

}  // namespace

uint32_t byte_level_char(uint8_t b) {
  // GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the rest to 256 + n.
  if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
  uint32_t n = 0;
  for (uint32_t x = 0; x < b; ++x) {
    bool printable = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE);
    if (!printable) ++n;
  }
  return 256 + n;
}

int byte_fallback_value(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  if (t[3] == '+') return hex(t[4]);  // Rust's u8::from_str_radix accepts a leading '+'
  int h = hex(t[3]), l = hex(t[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

}  // namespace tok

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                               const std::string& origin) {
  Tokenizer t;
  tok::TokenizerImpl& impl = *t.impl_;
  impl.origin = origin;
  tok::Loader L(impl);
  nlohmann::json j;
  tok::BigParts big;
  tok::scan_tokenizer_json(tokenizer_json, origin, j, big);
  try {
    if (!j.is_object()) L.bad("top level is not an object");
    if (j.contains("truncation") && !j["truncation"].is_null()) L.bad("unsupported option: truncation");
    if (j.contains("padding") && !j["padding"].is_null()) L.bad("unsupported option: padding");
    L.normalizer(j.value("normalizer", nlohmann::json()));
    L.pre_tokenizer(j.value("pre_tokenizer", nlohmann::json()));
    L.model(L.field(j, "model", "tokenizer.json"), big);
    L.added(j.value("added_tokens", nlohmann::json()));
    L.post_processor(j.value("post_processor", nlohmann::json()));
    L.decoder(j.value("decoder", nlohmann::json()));
    L.classify_stream();
    L.finish_added();
  } catch (const nlohmann::json::exception& e) {
    L.bad(std::string("malformed tokenizer.json: ") + e.what());
  }
  if (!config_json.empty()) {
    nlohmann::json c;
    try {
      c = nlohmann::json::parse(config_json);
    } catch (const nlohmann::json::exception& e) {
      L.bad(std::string("tokenizer_config.json: invalid JSON: ") + e.what());
    }
    if (!c.is_object()) L.bad("tokenizer_config.json: top level is not an object");
    try {
      L.config(c);
    } catch (const nlohmann::json::exception& e) {
      L.bad(std::string("tokenizer_config.json: ") + e.what());
    }
  }
  return t;
}

Tokenizer Tokenizer::load(const std::string& dir_or_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(dir_or_file);
  fs::path json_path = fs::is_directory(p, ec) ? p / "tokenizer.json" : p;
  fs::path dir = json_path.parent_path();
  if (!fs::exists(json_path, ec)) fail("tokenizer not found: ", json_path.string(), " does not exist");
  MappedFile f(json_path.string());
  std::string config;
  if (fs::exists(dir / "tokenizer_config.json", ec))
    config = read_text_file((dir / "tokenizer_config.json").string());
  std::string_view text(reinterpret_cast<const char*>(f.data()), f.size());
  Tokenizer t = from_json(text, config, json_path.string());
  if (t.impl_->chat_template.empty() && fs::exists(dir / "chat_template.jinja", ec))
    t.impl_->chat_template = read_text_file((dir / "chat_template.jinja").string());
  return t;
}

}  // namespace nbits
