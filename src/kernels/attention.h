// Attention of query rows that share the same key/value rows (the query heads
// of one GroupQueryAttention kv head, at one or several positions).
//
// attend_rows is the flash-style kernel (kernels/attention_tile_inl.h): tiles of
// up to attention_tile_rows() query rows against blocks of K/V rows with an online
// softmax; attend_rows_partial + attention_merge split one row set's keys across
// threads. attend_group is the one-position path (full scores in scratch, vector_ops
// helpers, heads in pairs sharing each K/V row load): decode (one position: fewer
// query rows than a tile's vector lanes) and heads above 512; attend_group_partial
// is its partial for decode split across threads.
#pragma once

#include <cstdint>

namespace nbits::kernels {

// int8 KV cache rows (--kv-cache q8): each row of head_size values is head_size int8 codes, then its
// fp32 scale in the next 4 bytes (memcpy; unaligned). Symmetric: scale = max|x| / 127, code =
// round(x / scale) (halves away from zero), value = code * scale; an all-zero row has scale 0.
// The int8_t overloads below take K/V as such rows (kv_q8_row_bytes(head_size) apart).
constexpr int64_t kv_q8_row_bytes(int64_t head_size) { return head_size + 4; }
void quantize_kv_q8_row(const float* x, int64_t head_size, int8_t* row);
void dequantize_kv_q8_row(const int8_t* row, int64_t head_size, float* x);

struct AttentionParams {
  int64_t head_size = 0;  // H: length of q, K and V rows
  float scale = 1.0f;     // scores = scale * q.k
  float softcap = 0.0f;   // > 0: scores = softcap * tanh(scores / softcap)
  bool smooth = false;    // smooth softmax: an extra exp(0) term in the denominator
  // Attention sinks (gpt-oss; GroupQueryAttention's head_sink): row r of a call has the extra
  // denominator term exp(sinks[r]) (r: the row's index in the call, g < nq or r < rows.n); smooth
  // is the sink 0 on every row. Partials leave the term to attention_merge, which takes the same
  // rows.
  const float* sinks = nullptr;
};

// Whether rows of p have a sink term, and row r's sink logit.
inline bool has_sink(const AttentionParams& p) { return p.smooth || p.sinks != nullptr; }
inline float sink_logit(const AttentionParams& p, int64_t r) {
  return p.sinks != nullptr ? p.sinks[r] : 0.0f;
}

// For g < nq: out[g * out_stride + i] = sum_j softmax_j(scale * q_g . K_j) V[j * H + i], with
// q_g = q + g * q_stride and j < n (K, V: n rows of H floats). n >= 1; scratch holds nq * n floats.
void attend_group(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V, int64_t n,
                  const AttentionParams& p, float* scratch, float* out, int64_t out_stride);
// The same over an IEEE fp16 cache (K, V: n rows of H halves), widened as read.
void attend_group(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                  int64_t n, const AttentionParams& p, float* scratch, float* out, int64_t out_stride);
// The same over an int8 cache (K, V: n rows of kv_q8_row_bytes(H)), dequantized as read.
void attend_group(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V, int64_t n,
                  const AttentionParams& p, float* scratch, float* out, int64_t out_stride);

// Query rows of one kv head: row r < n has its query at q[r] (head_size floats), sees the keys
// [lo[r], hi[r]) of K/V (0 <= lo < hi; rows of head_size values) and gets its output at out[r].
struct AttentionRows {
  const float* const* q = nullptr;
  float* const* out = nullptr;
  const int64_t* lo = nullptr;
  const int64_t* hi = nullptr;
  int64_t n = 0;
};

// Query rows one tile of the dispatched kernel holds (2 vectors: 32 on AVX-512, 16 on AVX2).
int64_t attention_tile_rows();
// Longest head attend_rows takes, and the most tile rows of any ISA.
constexpr int64_t kAttentionMaxHead = 512;
constexpr int64_t kAttentionMaxTileRows = 32;

// out[r][i] = sum_{lo[r] <= j < hi[r]} softmax_j(scale * q_r . K_j) V[j][i], with softcap and
// smooth softmax as in AttentionParams. head_size <= kAttentionMaxHead. Any number of rows.
void attend_rows(const AttentionRows& rows, const float* K, const float* V, const AttentionParams& p);
void attend_rows(const AttentionRows& rows, const uint16_t* K, const uint16_t* V, const AttentionParams& p);
void attend_rows(const AttentionRows& rows, const int8_t* K, const int8_t* V, const AttentionParams& p);

// Floats one partial of n rows takes.
inline int64_t attention_part_floats(int64_t n, int64_t head_size) { return n * (head_size + 2); }
// The same over keys [jb, je) only (each row's range cut to it; a row may see none): into part,
// the unnormalised outputs [n][head_size], then the running max [n] (-FLT_MAX where a row saw no
// key), then the sums of exp(score - max) [n]. The smooth term is left to attention_merge.
void attend_rows_partial(const AttentionRows& rows, const float* K, const float* V, int64_t jb, int64_t je,
                         const AttentionParams& p, float* part);
void attend_rows_partial(const AttentionRows& rows, const uint16_t* K, const uint16_t* V, int64_t jb,
                         int64_t je, const AttentionParams& p, float* part);
void attend_rows_partial(const AttentionRows& rows, const int8_t* K, const int8_t* V, int64_t jb, int64_t je,
                         const AttentionParams& p, float* part);
// out[r] from nparts partials of the same n rows at parts + k * part_stride (every row saw a key in
// at least one part).
void attention_merge(const float* parts, int64_t nparts, int64_t part_stride, int64_t n,
                     const AttentionParams& p, float* const* out);

// attend_group over keys [0, n) of K/V as one partial of nq rows (attend_rows_partial's layout, no
// smooth term; n >= 1): decode at long context, the keys split across threads.
void attend_group_partial(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V,
                          int64_t n, const AttentionParams& p, float* scratch, float* part);
void attend_group_partial(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                          int64_t n, const AttentionParams& p, float* scratch, float* part);
void attend_group_partial(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V,
                          int64_t n, const AttentionParams& p, float* scratch, float* part);

// One position (decode) with the keys across the vector lanes (kernels/attention_decode_inl.h): the
// same result as attend_group (out[g * out_stride + i] for the nq heads at q + g * q_stride over the
// n >= 1 keys of K/V; softcap and smooth softmax as in AttentionParams), scores of a block of keys
// as one vector per head, an online softmax over key blocks, no scratch from the caller.
// head_size <= kAttentionMaxHead; any nq (K/V are read once per kAttentionDecodeHeads heads).
constexpr int64_t kAttentionDecodeHeads = 32;
void attend_decode(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V, int64_t n,
                   const AttentionParams& p, float* out, int64_t out_stride);
void attend_decode(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                   int64_t n, const AttentionParams& p, float* out, int64_t out_stride);
void attend_decode(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V, int64_t n,
                   const AttentionParams& p, float* out, int64_t out_stride);
// attend_decode over keys [0, n) of K/V as one partial of nq rows (attend_rows_partial's layout, no
// smooth term): decode at long context, the keys split across threads.
void attend_decode_partial(const float* q, int64_t q_stride, int64_t nq, const float* K, const float* V,
                           int64_t n, const AttentionParams& p, float* part);
void attend_decode_partial(const float* q, int64_t q_stride, int64_t nq, const uint16_t* K, const uint16_t* V,
                           int64_t n, const AttentionParams& p, float* part);
void attend_decode_partial(const float* q, int64_t q_stride, int64_t nq, const int8_t* K, const int8_t* V,
                           int64_t n, const AttentionParams& p, float* part);

// The ISA the tile and decode kernels dispatched to ("avx512", "avx2" or "scalar").
const char* attention_isa();
// Tests: use that ISA's tile and decode kernels from now on; false (and nothing changed) where this CPU or
// build lacks it.
bool attention_select_isa(const char* isa);

}  // namespace nbits::kernels
