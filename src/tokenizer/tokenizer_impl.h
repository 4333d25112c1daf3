// Internal representation of a loaded tokenizer (shared by the loader, encoder and decoders).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/regex.h"

namespace nbits::tok {

// Open-addressing map from token strings to ids (keys kept in one arena).
class StringMap {
 public:
  void reserve(size_t n);
  // Inserts or replaces (the later value wins, as in a JSON object read into a HashMap).
  void insert_or_assign(std::string_view key, int32_t id);
  // Id of key, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    uint64_t h = hash(key);
    uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.entry == kEmpty) return -1;
      if (sl.tag == tag && key_of(entries_[sl.entry]) == key) return entries_[sl.entry].id;
    }
  }
  size_t size() const { return entries_.size(); }
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Entry& e : entries_) fn(key_of(e), e.id);
  }
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h ^ (h >> 32);
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFF;
  struct Entry {
    uint64_t hash;
    uint32_t off, len;
    int32_t id;
  };
  std::string_view key_of(const Entry& e) const { return std::string_view(arena_).substr(e.off, e.len); }
  void rehash(size_t cap);
  std::string arena_;
  std::vector<Entry> entries_;
  struct Slot {
    uint32_t entry, tag;  // tag: high half of the hash
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Open-addressing map from a pair of token ids to (merge rank, merged id).
class MergeMap {
 public:
  void reserve(size_t n);
  // Returns false if the pair was already present (the first rank is kept).
  bool insert(int32_t a, int32_t b, int32_t rank, int32_t id);
  // Returns a pointer to {rank, id} or nullptr.
  const std::array<int32_t, 2>* find(int32_t a, int32_t b) const {
    if (slots_.empty()) return nullptr;
    uint64_t key = pack(a, b);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static size_t hash(uint64_t k) { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20); }
  struct Slot {
    uint64_t key = kEmpty;
    std::array<int32_t, 2> value{};
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
};

struct NormStep {
  enum Kind { kNfc, kPrepend, kReplace } kind;
  std::string a, b;  // kPrepend: a; kReplace: a -> b
};

struct PreStep {
  enum Kind { kSplit, kByteLevel, kDigits } kind;
  Regex re;                // kSplit; kByteLevel with use_regex
  bool removed = false;    // kSplit: behavior Removed (else Isolated)
  bool flag = false;       // kByteLevel: add_prefix_space; kDigits: individual_digits
  bool use_regex = false;  // kByteLevel
};

struct DecStep {
  enum Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind;
  std::string a, b;  // kReplace: a -> b; kStrip: a = content; kMetaspace: a = replacement
  size_t start = 0, stop = 0;
  bool prepend = true;  // kMetaspace: prepend_scheme != never
};

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
};

// One item of the post-processor's "single" template: ids to insert, or the sequence itself.
struct PostItem {
  bool sequence = false;
  std::vector<int32_t> ids;
};

enum class StreamKind { kByteLevel, kPieces, kWhole };

struct TokenizerImpl {
  std::string origin;  // file name for messages
  // Model (BPE).
  StringMap vocab;
  std::vector<std::string> id_to_token;  // model and added tokens
  MergeMap merges;
  int32_t unk_id = -1;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is a vocabulary entry is that token (Llama-3)
  bool byte_fallback = false;
  std::array<int32_t, 256> byte_fallback_ids{};   // <0xNN> ids (-1 when absent)
  bool byte_level = false;                        // words are mapped bytes (ByteLevel pre-tokenizer)
  std::array<int32_t, 256> byte_level_ids{};      // vocab id of each mapped byte (-1 when absent)
  std::array<std::string, 256> byte_level_chars;  // mapped byte -> UTF-8 of its stand-in char

  std::vector<NormStep> normalizer;
  std::vector<PreStep> pre;
  bool has_decoder = false;
  std::vector<DecStep> decoder;
  StreamKind stream_kind = StreamKind::kWhole;
  std::vector<PostItem> post;  // empty: no template

  std::vector<AddedToken> added;            // in file order
  std::vector<uint8_t> special;             // per id: special added token
  std::vector<int32_t> plain_added;         // indexes of added tokens matched on raw text
  std::vector<int32_t> normed_added;        // indexes of added tokens matched on normalized text
  std::vector<std::string> normed_content;  // normalized content, per added token

  int32_t bos_id = -1, eos_id = -1;
  std::string bos_token, eos_token, chat_template;

  // Pipeline pieces (tokenizer.cc).
  std::string normalize(std::string_view s) const;
  void encode_words(std::string_view normalized, std::vector<int32_t>& out) const;
  void bpe(std::string_view word, std::vector<int32_t>& out) const;
  // whole_text: the decoder's Strip steps apply (a text's first token loses its leading space).
  std::string decode_tokens(std::vector<std::string> tokens, bool whole_text = true) const;
};

// Byte-level alphabet of GPT-2: the code point standing for each byte.
uint32_t byte_level_char(uint8_t b);
// ByteLevel decoding of one token: its bytes, or the token itself if a character is not a byte.
std::string byte_level_bytes(const std::string& token);
// Parses "<0xNN>" into its byte; returns -1 if the token is not of that form.
int byte_fallback_value(std::string_view token);

}  // namespace nbits::tok
