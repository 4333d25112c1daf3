// Encoding (added tokens, normalizer, pre-tokenizer, BPE, post-processor) and decoding.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <queue>

#include "base/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace nbits {
namespace tok {

void StringMap::rehash(size_t cap) {
  slots_.assign(cap, Slot{kEmpty, 0});
  mask_ = cap - 1;
  for (uint32_t e = 0; e < entries_.size(); ++e) {
    size_t i = entries_[e].hash & mask_;
    while (slots_[i].entry != kEmpty) i = (i + 1) & mask_;
    slots_[i] = {e, static_cast<uint32_t>(entries_[e].hash >> 32)};
  }
}

void StringMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  entries_.reserve(n);
  if (cap > slots_.size()) rehash(cap);
}

void StringMap::insert_or_assign(std::string_view key, int32_t id) {
  if ((entries_.size() + 1) * 2 > slots_.size()) rehash(std::max<size_t>(16, slots_.size() * 2));
  uint64_t h = hash(key);
  size_t i = h & mask_;
  uint32_t tag = static_cast<uint32_t>(h >> 32);
  for (; slots_[i].entry != kEmpty; i = (i + 1) & mask_) {
    Entry& en = entries_[slots_[i].entry];
    if (slots_[i].tag == tag && key_of(en) == key) {
      en.id = id;
      return;
    }
  }
  slots_[i] = {static_cast<uint32_t>(entries_.size()), tag};
  entries_.push_back({h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id});
  arena_.append(key);
}

void MergeMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
}

bool MergeMap::insert(int32_t a, int32_t b, int32_t rank, int32_t id) {
  if ((size_ + 1) * 2 > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    reserve(std::max<size_t>(16, old.size()));
    for (const Slot& s : old)
      if (s.key != kEmpty)
        insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFF), s.value[0],
               s.value[1]);
  }
  uint64_t key = pack(a, b);
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) {
      s.value = {rank, id};  // like Rust's HashMap collect: the later merge wins
      return false;
    }
    if (s.key == kEmpty) {
      s.key = key;
      s.value = {rank, id};
      ++size_;
      return true;
    }
  }
}

std::string TokenizerImpl::normalize(std::string_view s) const {
  std::string cur(s);
  for (const NormStep& n : normalizer) {
    switch (n.kind) {
      case NormStep::kNfc:
        cur = nfc(cur);
        break;
      case NormStep::kPrepend:
        if (!cur.empty()) cur.insert(0, n.a);
        break;
      case NormStep::kReplace: {
        if (cur.find(n.a) == std::string::npos) break;
        std::string r;
        size_t pos = 0;
        for (size_t f; (f = cur.find(n.a, pos)) != std::string::npos; pos = f + n.a.size()) {
          r.append(cur, pos, f - pos);
          r += n.b;
        }
        r.append(cur, pos);
        cur = std::move(r);
        break;
      }
    }
  }
  return cur;
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev, next;
  bool removed;
};

struct MergeEntry {
  int32_t rank, pos, id;
  bool operator<(const MergeEntry& o) const {  // priority_queue pops the largest: invert
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

void TokenizerImpl::bpe(std::string_view w, std::vector<int32_t>& out) const {
  if (ignore_merges) {  // tokenizers' BPE::ignore_merges: the whole word first
    int32_t id = -1;
    if (byte_level) {
      thread_local std::string mapped;
      mapped.clear();
      for (unsigned char b : w) mapped += byte_level_chars[b];
      id = vocab.find(mapped);
    } else {
      id = vocab.find(w);
    }
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  thread_local std::vector<Symbol> sym;
  sym.clear();
  auto add = [&](int32_t id) {
    int32_t n = static_cast<int32_t>(sym.size());
    sym.push_back({id, n - 1, n + 1, false});
  };
  int32_t unk = -1;  // pending (possibly fused) unknown token
  auto unknown = [&]() {
    if (unk_id < 0) return;  // no unk token: the character is dropped, as in tokenizers
    if (unk >= 0 && !fuse_unk) add(unk);
    unk = unk_id;
  };
  if (byte_level) {
    for (unsigned char b : w) {
      int32_t id = byte_level_ids[b];
      if (id >= 0) {
        if (unk >= 0) add(unk), unk = -1;
        add(id);
      } else {
        unknown();
      }
    }
  } else {
    for (size_t i = 0; i < w.size();) {
      size_t len = 1;
      while (i + len < w.size() && (static_cast<unsigned char>(w[i + len]) & 0xC0) == 0x80) ++len;
      int32_t id = vocab.find(w.substr(i, len));
      if (id >= 0) {
        if (unk >= 0) add(unk), unk = -1;
        add(id);
      } else {
        bool done = false;
        if (byte_fallback) {
          done = true;
          for (size_t k = 0; k < len; ++k)
            done = done && byte_fallback_ids[static_cast<unsigned char>(w[i + k])] >= 0;
          if (done)
            for (size_t k = 0; k < len; ++k) add(byte_fallback_ids[static_cast<unsigned char>(w[i + k])]);
        }
        if (!done) unknown();
      }
      i += len;
    }
  }
  if (unk >= 0) add(unk);
  if (sym.empty()) return;
  sym.back().next = -1;
  const int32_t n = static_cast<int32_t>(sym.size());
  if (n > 1) {
    thread_local std::vector<MergeEntry> heap_storage;
    heap_storage.clear();
    std::priority_queue<MergeEntry> queue(std::less<MergeEntry>(), std::move(heap_storage));
    for (int32_t i = 0; i + 1 < n; ++i)
      if (const auto* m = merges.find(sym[i].id, sym[i + 1].id)) queue.push({(*m)[0], i, (*m)[1]});
    while (!queue.empty()) {
      MergeEntry top = queue.top();
      queue.pop();
      Symbol& cur = sym[static_cast<size_t>(top.pos)];
      if (cur.removed || cur.next < 0) continue;
      Symbol& right = sym[static_cast<size_t>(cur.next)];
      const auto* m = merges.find(cur.id, right.id);
      if (!m || (*m)[1] != top.id) continue;
      cur.id = top.id;
      right.removed = true;
      cur.next = right.next;
      if (cur.next >= 0) sym[static_cast<size_t>(cur.next)].prev = top.pos;
      if (cur.prev >= 0)
        if (const auto* pm = merges.find(sym[static_cast<size_t>(cur.prev)].id, cur.id))
          queue.push({(*pm)[0], cur.prev, (*pm)[1]});
      if (cur.next >= 0)
        if (const auto* nm = merges.find(cur.id, sym[static_cast<size_t>(cur.next)].id))
          queue.push({(*nm)[0], top.pos, (*nm)[1]});
    }
  }
  for (const Symbol& s : sym)
    if (!s.removed) out.push_back(s.id);
}

void TokenizerImpl::encode_words(std::string_view normalized, std::vector<int32_t>& out) const {
  if (normalized.empty()) return;
  if (pre.empty()) {
    bpe(normalized, out);
    return;
  }
  std::vector<uint32_t> cps = decode_utf8(normalized);
  using Piece = std::pair<uint32_t, uint32_t>;
  std::vector<Piece> pieces{{0, static_cast<uint32_t>(cps.size())}}, next;
  auto split_regex = [&](const Regex& re, bool removed) {
    next.clear();
    for (const Piece& piece : pieces) {
      const uint32_t b = piece.first, e = piece.second;
      uint32_t last = b;
      re.for_each_match(cps.data() + b, e - b, [&](size_t mb, size_t me) {
        if (b + mb > last) next.push_back({last, static_cast<uint32_t>(b + mb)});
        if (!removed && me > mb)
          next.push_back({static_cast<uint32_t>(b + mb), static_cast<uint32_t>(b + me)});
        last = static_cast<uint32_t>(b + me);
      });
      if (e > last) next.push_back({last, e});
    }
    pieces.swap(next);
  };
  for (const PreStep& p : pre) {
    switch (p.kind) {
      case PreStep::kSplit:
        split_regex(p.re, p.removed);
        break;
      case PreStep::kDigits: {
        next.clear();
        for (auto [b, e] : pieces) {
          uint32_t start = b;
          for (uint32_t i = b; i < e;) {
            if (is_number(cps[i])) {  // Rust's char::is_numeric: Nd, Nl, No
              uint32_t j = i + 1;
              if (!p.flag)
                while (j < e && is_number(cps[j])) ++j;
              if (i > start) next.push_back({start, i});
              next.push_back({i, j});
              start = i = j;
            } else {
              ++i;
            }
          }
          if (e > start) next.push_back({start, e});
        }
        pieces.swap(next);
        break;
      }
      case PreStep::kByteLevel:
        if (p.flag) {
          for (auto& [b, e] : pieces) {
            if (cps[b] == ' ') continue;
            uint32_t nb = static_cast<uint32_t>(cps.size());
            cps.push_back(' ');
            for (uint32_t i = b; i < e; ++i) cps.push_back(cps[i]);
            b = nb;
            e = static_cast<uint32_t>(cps.size());
          }
        }
        if (p.use_regex) split_regex(p.re, false);
        break;
    }
  }
  std::string word;
  for (auto [b, e] : pieces) {
    word.clear();
    for (uint32_t i = b; i < e; ++i) append_utf8(word, cps[i]);
    bpe(word, out);
  }
}

std::string byte_level_bytes(const std::string& token) {
  static const std::vector<int> reverse = [] {
    std::vector<int> r(512, -1);
    for (int b = 0; b < 256; ++b) r[byte_level_char(static_cast<uint8_t>(b))] = b;
    return r;
  }();
  std::string mapped;
  for (size_t i = 0; i < token.size();) {
    uint32_t c;
    bool trunc;
    i += utf8_step(token, i, c, trunc);
    if (c >= 512 || reverse[c] < 0) return token;
    mapped.push_back(static_cast<char>(reverse[c]));
  }
  return mapped;
}

namespace {

// Splits text on added tokens (leftmost-longest), calling on_text(piece) and on_token(id).
template <typename OnText, typename OnToken>
void split_added(const TokenizerImpl& t, const std::vector<int32_t>& which, std::string_view s,
                 OnText&& on_text, OnToken&& on_token) {
  if (which.empty()) {
    on_text(s);
    return;
  }
  size_t start = 0;  // beginning of the pending text piece
  for (size_t i = 0; i < s.size();) {
    const AddedToken* best = nullptr;
    size_t best_len = 0;
    for (int32_t k : which) {
      const std::string& c = t.normed_content[static_cast<size_t>(k)];
      if (c.size() > best_len && s.compare(i, c.size(), c) == 0) {
        best = &t.added[static_cast<size_t>(k)];
        best_len = c.size();
      }
    }
    if (!best) {
      ++i;
      continue;
    }
    size_t b = i, e = i + best_len;
    if (best->lstrip) {
      std::vector<uint32_t> left = decode_utf8(s.substr(start, b - start));
      size_t k = left.size();
      while (k > 0 && is_whitespace(left[k - 1])) --k;
      std::string kept =
          encode_utf8(std::vector<uint32_t>(left.begin(), left.begin() + static_cast<ptrdiff_t>(k)));
      b = start + kept.size();
    }
    if (best->rstrip) {
      while (e < s.size()) {
        uint32_t cp;
        bool trunc;
        size_t len = utf8_step(s, e, cp, trunc);
        if (!is_whitespace(cp)) break;
        e += len;
      }
    }
    if (b > start) on_text(s.substr(start, b - start));
    on_token(best->id);
    start = i = e;
  }
  if (s.size() > start) on_text(s.substr(start));
}

}  // namespace

std::string TokenizerImpl::decode_tokens(std::vector<std::string> tokens, bool whole_text) const {
  if (!has_decoder) {
    std::string r;
    for (size_t i = 0; i < tokens.size(); ++i) r += (i ? " " : "") + tokens[i];
    return r;
  }
  for (const DecStep& d : decoder) {
    switch (d.kind) {
      case DecStep::kByteLevel: {
        std::string bytes;
        for (const std::string& tkn : tokens) bytes += byte_level_bytes(tkn);
        tokens.assign(1, sanitize_utf8(bytes));
        break;
      }
      case DecStep::kReplace:
        for (std::string& tkn : tokens) {
          std::string r;
          size_t pos = 0;
          for (size_t f; (f = tkn.find(d.a, pos)) != std::string::npos; pos = f + d.a.size()) {
            r.append(tkn, pos, f - pos);
            r += d.b;
          }
          r.append(tkn, pos);
          tkn = std::move(r);
        }
        break;
      case DecStep::kByteFallback: {
        std::vector<std::string> r;
        std::string run;
        size_t run_len = 0;
        auto flush_run = [&]() {
          if (!run_len) return;
          if (utf8_is_valid(run))
            r.push_back(run);
          else
            for (size_t k = 0; k < run_len; ++k) r.push_back("\xEF\xBF\xBD");
          run.clear();
          run_len = 0;
        };
        for (std::string& tkn : tokens) {
          int v = byte_fallback_value(tkn);
          if (v >= 0) {
            run.push_back(static_cast<char>(v));
            ++run_len;
          } else {
            flush_run();
            r.push_back(std::move(tkn));
          }
        }
        flush_run();
        tokens = std::move(r);
        break;
      }
      case DecStep::kFuse: {
        std::string all;
        for (const std::string& tkn : tokens) all += tkn;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecStep::kStrip:
        if (!whole_text) break;
        for (std::string& tkn : tokens) {
          size_t b = 0;
          for (size_t k = 0; k < d.start && tkn.compare(b, d.a.size(), d.a) == 0; ++k) b += d.a.size();
          size_t e = tkn.size();
          for (size_t k = 0;
               k < d.stop && e >= b + d.a.size() && tkn.compare(e - d.a.size(), d.a.size(), d.a) == 0; ++k)
            e -= d.a.size();
          tkn = tkn.substr(b, e - b);
        }
        break;
      case DecStep::kMetaspace:
        break;
    }
  }
  std::string r;
  for (const std::string& tkn : tokens) r += tkn;
  return r;
}

}  // namespace tok

Tokenizer::Tokenizer() : impl_(std::make_unique<tok::TokenizerImpl>()) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  const tok::TokenizerImpl& t = *impl_;
  std::string clean = tok::sanitize_utf8(text);
  std::vector<int32_t> ids;
  tok::split_added(
      t, t.plain_added, clean,
      [&](std::string_view piece) {
        std::string normed = t.normalize(piece);
        tok::split_added(
            t, t.normed_added, normed, [&](std::string_view p) { t.encode_words(p, ids); },
            [&](int32_t id) { ids.push_back(id); });
      },
      [&](int32_t id) { ids.push_back(id); });
  if (!add_special || t.post.empty()) return ids;
  std::vector<int32_t> r;
  for (const auto& p : t.post) {
    if (p.sequence)
      r.insert(r.end(), ids.begin(), ids.end());
    else
      r.insert(r.end(), p.ids.begin(), p.ids.end());
  }
  return r;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  const tok::TokenizerImpl& t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    NBITS_CHECK(id >= 0 && static_cast<size_t>(id) < t.id_to_token.size(), "token id ", id,
                " is out of range (vocabulary size ", t.id_to_token.size(), ")");
    if (skip_special && t.special[static_cast<size_t>(id)]) continue;
    tokens.push_back(t.id_to_token[static_cast<size_t>(id)]);
  }
  return t.decode_tokens(std::move(tokens));
}

std::vector<std::string> Tokenizer::token_bytes() const {
  const tok::TokenizerImpl& t = *impl_;
  std::vector<std::string> r(t.id_to_token.size());
  for (size_t id = 0; id < r.size(); ++id) {
    const std::string& s = t.id_to_token[id];
    if (s.empty()) continue;
    if (t.byte_level) {
      r[id] = tok::byte_level_bytes(s);
    } else if (const int v = tok::byte_fallback_value(s); t.byte_fallback && v >= 0) {
      r[id] = std::string(1, static_cast<char>(v));
    } else {
      r[id] = t.decode_tokens({s}, /*whole_text=*/false);
    }
  }
  for (const auto& a : t.added)
    if (a.id >= 0 && static_cast<size_t>(a.id) < r.size()) r[static_cast<size_t>(a.id)] = a.content;
  return r;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size()) return "";
  return impl_->id_to_token[static_cast<size_t>(id)];
}

int32_t Tokenizer::token_to_id(std::string_view token) const {
  for (const auto& a : impl_->added)
    if (a.content == token) return a.id;
  return impl_->vocab.find(token);
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() &&
         impl_->special[static_cast<size_t>(id)];
}
int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_to_token.size()); }
int32_t Tokenizer::bos_id() const { return impl_->bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->eos_id; }
const std::string& Tokenizer::bos_token() const { return impl_->bos_token; }
const std::string& Tokenizer::eos_token() const { return impl_->eos_token; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }

}  // namespace nbits
