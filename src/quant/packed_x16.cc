#include "quant/packed_x16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"

namespace nbits::quant {

AlignedBytes AlignedBytes::uninitialized(size_t n) {
  AlignedBytes a;
  a.n_ = n;
  const size_t rounded = (n + 63) / 64 * 64;
  a.p_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded)));
  if (!a.p_) throw std::bad_alloc();
  std::memset(a.p_.get() + n, 0, (rounded == 0 ? 64 : rounded) - n);  // the padding past n
  return a;
}

AlignedBytes::AlignedBytes(size_t n) : AlignedBytes(uninitialized(n)) { std::memset(p_.get(), 0, n); }

bool x16_packable(const kernels::QuantizedMatrix& w) {
  return (w.bits == 4 || w.bits == 8) && w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0 &&
         w.zero_points_f == nullptr && w.N > 0 && w.K > 0;
}

bool scales_fit_fp16(const kernels::QuantizedMatrix& w) {
  const float kMinNormal = 6.103515625e-05f;  // 2^-14
  const int64_t n = w.N * w.k_blocks();
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(w.scales[i]);
    if (!(a == 0.0f || (a >= kMinNormal && a <= 65504.0f))) return false;  // NaN fails too
  }
  return true;
}

bool scales_exact_fp16(const kernels::QuantizedMatrix& w) {
  if (!scales_fit_fp16(w)) return false;
  const int64_t n = w.N * w.k_blocks();
  for (int64_t i = 0; i < n; ++i)
    if (fp16_to_float(float_to_fp16(w.scales[i])) != w.scales[i]) return false;
  return true;
}

namespace {

// Packs source rows [n0, n1) of w into p; n0 is a multiple of 16, so calls on
// different row ranges write disjoint panels. Returns the range of the codes packed.
CodeRange pack_rows(const kernels::QuantizedMatrix& w, PackedX16& p, int64_t n0, int64_t n1) {
  const int64_t blob = w.blob_bytes(), kb = p.k_blocks, BL = w.block_size;
  CodeRange range;
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t pi = n / 16, c = n % 16;
    for (int64_t b = 0; b < kb; ++b) {
      uint8_t* blk = p.data.data() + pi * p.panel_stride + b * p.block_stride;
      const float s = w.scales[n * kb + b];
      if (p.scales_fp16) {
        const uint16_t h = float_to_fp16(s);
        std::memcpy(blk + 2 * c, &h, 2);
      } else {
        std::memcpy(blk + 4 * c, &s, 4);
      }
      if (p.has_mins) std::memcpy(blk + p.mins_offset + 4 * c, &w.mins[n * kb + b], 4);
      if (p.has_zp) blk[p.zp_offset + c] = static_cast<uint8_t>(w.zero_point(n, b));
      const uint8_t* src = w.codes + (n * kb + b) * blob;
      uint8_t* codes = blk + p.header_bytes;
      const int64_t valid = std::min<int64_t>(BL, w.K - b * BL);  // codes past K stay 0
      if (w.bits == 4) {
        auto q = [&](int64_t j) -> uint8_t { return j < valid ? (src[j / 2] >> ((j & 1) * 4)) & 0xf : 0; };
        for (int64_t g = 0; g < BL / 8; ++g)
          for (int i = 0; i < 4; ++i)
            codes[g * 64 + 4 * c + i] = static_cast<uint8_t>(q(8 * g + i) | (q(8 * g + 4 + i) << 4));
        for (int64_t j = 0; j < valid; ++j) range.add((src[j / 2] >> ((j & 1) * 4)) & 0xf);
      } else if (p.bits == 5) {
        // Low nibbles as int4 (k 8g+i low, 8g+4+i high); bit 4 in the plane of step j / 4.
        auto q = [&](int64_t j) -> int { return j < valid ? src[j] - p.code_lo : 0; };
        for (int64_t g = 0; g < BL / 8; ++g)
          for (int i = 0; i < 4; ++i)
            codes[g * 64 + 4 * c + i] =
                static_cast<uint8_t>((q(8 * g + i) & 0xf) | ((q(8 * g + 4 + i) & 0xf) << 4));
        uint8_t* planes = blk + p.high_planes_offset();
        const int64_t lane = c < 8 ? 4 * c : 32 + 4 * (c - 8);
        for (int64_t j = 0; j < valid; ++j) {
          const int64_t step = j / 4;
          if ((q(j) & 0x10) != 0)
            planes[(step / 8) * 64 + lane + j % 4] |= static_cast<uint8_t>(1u << (step % 8));
        }
        for (int64_t j = 0; j < valid; ++j) range.add(src[j]);
      } else {
        for (int64_t g = 0; g < BL / 4; ++g)
          for (int i = 0; i < 4; ++i) {
            const int64_t j = 4 * g + i;
            codes[g * 64 + 4 * c + i] = j < valid ? src[j] : 0;
          }
        for (int64_t j = 0; j < valid; ++j) range.add(src[j]);
      }
    }
  }
  return range;
}

}  // namespace

int uniform_zero_point(const kernels::QuantizedMatrix& w) {
  if (w.zero_points == nullptr || w.zero_points_f != nullptr) return -1;
  const int64_t kb = w.k_blocks();
  const float z = w.zero_point(0, 0);
  for (int64_t n = 0; n < w.N; ++n)
    for (int64_t b = 0; b < kb; ++b)
      if (w.zero_point(n, b) != z) return -1;
  return static_cast<int>(z);
}

CodeRange code_range(const kernels::QuantizedMatrix& w) {
  CodeRange r;
  const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
  for (int64_t n = 0; n < w.N; ++n)
    for (int64_t b = 0; b < kb; ++b) {
      const uint8_t* src = w.codes + (n * kb + b) * blob;
      const int64_t valid = std::min<int64_t>(w.block_size, w.K - b * w.block_size);
      for (int64_t j = 0; j < valid; ++j) r.add(w.bits == 4 ? (src[j / 2] >> ((j & 1) * 4)) & 0xf : src[j]);
    }
  return r;
}

PackedX16 pack_x16(const kernels::QuantizedMatrix& w, bool fp16_scales,
                   const std::function<void(int64_t)>& rows_consumed, ThreadPool* pool, bool fold_uniform_zp,
                   bool int5) {
  NBITS_ASSERT(x16_packable(w));
  PackedX16 p;
  p.bits = w.bits;
  if (int5 && w.bits == 8 && w.block_size % 32 == 0) {
    const CodeRange r = code_range(w);
    if (r.hi - r.lo <= 31) p.bits = 5, p.code_lo = r.lo;
  }
  p.block = w.block_size;
  p.N = w.N;
  p.K = w.K;
  p.k_blocks = w.k_blocks();
  p.panels = (w.N + 15) / 16;
  p.has_zp = w.zero_points != nullptr;
  if (p.has_zp && fold_uniform_zp) {
    p.uniform_zp = uniform_zero_point(w);
    p.has_zp = p.uniform_zp < 0;
  }
  p.has_mins = w.mins != nullptr;
  p.scales_fp16 = fp16_scales && scales_fit_fp16(w);
  p.mins_offset = p.scales_fp16 ? 32 : 64;
  p.zp_offset = p.mins_offset + (p.has_mins ? 64 : 0);
  p.header_bytes = p.zp_offset + (p.has_zp ? kZpBytes : 0);
  const size_t code_bytes = static_cast<size_t>(16) * w.block_size * p.bits / 8;
  p.block_stride = p.header_bytes + code_bytes;
  p.panel_stride = p.block_stride * static_cast<size_t>(p.k_blocks);
  // Zeroed panel by panel as the chunks reach them (pack_rows writes only non-zero bytes).
  p.data = AlignedBytes::uninitialized(p.panel_stride * static_cast<size_t>(p.panels));

  // Waves of one 256-row chunk (16 whole panels) per thread; after each wave the
  // rows before it are done for good.
  constexpr int64_t kRows = 256;
  const int64_t chunks = (w.N + kRows - 1) / kRows;
  const int64_t threads = pool != nullptr ? pool->num_threads() : 1;
  std::vector<CodeRange> ranges(static_cast<size_t>(chunks));
  for (int64_t c0 = 0; c0 < chunks; c0 += threads) {
    const int64_t c1 = std::min(chunks, c0 + threads);
    auto task = [&](int64_t i) {
      const int64_t n0 = (c0 + i) * kRows, n1 = std::min(w.N, n0 + kRows);
      const int64_t first = n0 / 16, last = (n1 + 15) / 16;  // the chunk's panels
      std::memset(p.data.data() + static_cast<size_t>(first) * p.panel_stride, 0,
                  static_cast<size_t>(last - first) * p.panel_stride);
      ranges[static_cast<size_t>(c0 + i)] = pack_rows(w, p, n0, n1);
    };
    if (pool != nullptr) {
      pool->parallel_for(c1 - c0, task);
    } else {
      for (int64_t i = 0; i < c1 - c0; ++i) task(i);
    }
    if (rows_consumed) rows_consumed(std::min(w.N, c1 * kRows));
  }
  CodeRange all;
  for (const CodeRange& r : ranges) all.add(r.lo), all.add(r.hi);
  p.code_lo = all.lo, p.code_hi = all.hi;
  return p;
}

}  // namespace nbits::quant
