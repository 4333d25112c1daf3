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
  const size_t rounded = n == 0 ? 64 : (n + 63) / 64 * 64;
  a.p_ = std::unique_ptr<uint8_t[], AlignedBytesFree>(static_cast<uint8_t*>(huge_page_alloc(rounded)),
                                                      AlignedBytesFree{rounded});
  if (!a.p_) throw std::bad_alloc();
  std::memset(a.p_.get() + n, 0, rounded - n);  // the padding past n
  return a;
}

AlignedBytes AlignedBytes::scratch(size_t n) {
  AlignedBytes a;
  a.n_ = n;
  const size_t rounded = n == 0 ? 64 : (n + 63) / 64 * 64;
  a.p_ = std::unique_ptr<uint8_t[], AlignedBytesFree>(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)),
                                                      AlignedBytesFree{rounded});
  if (!a.p_) throw std::bad_alloc();
  std::memset(a.p_.get() + n, 0, rounded - n);
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

// fp16 D and int8 q[i] with (float)q[i] * D == v[i] for the n values of one super-block run; false
// when there are none. D is v[imax] / c for the largest |v|: first the c that ggml's K-quant
// quantizers give the largest sub-block scale (63: Q4_K / Q5_K; -128: Q6_K; 15: Q2_K; -32: Q3_K /
// IQ4_XS), then every other c.
bool super_run(const float* v, int64_t n, int8_t* q, uint16_t* d) {
  int64_t imax = -1;
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(v[i]);
    if (!(a <= 3.0e38f)) return false;  // inf or NaN
    if (a > amax) amax = a, imax = i;
  }
  if (imax < 0) {  // all zero
    std::fill(q, q + n, int8_t{0});
    *d = 0;
    return true;
  }
  const auto try_c = [&](int c) {
    const float D = v[imax] / static_cast<float>(c);
    const uint16_t h = float_to_fp16(D);
    if (D == 0.0f || fp16_to_float(h) != D) return false;
    for (int64_t i = 0; i < n; ++i) {
      const float r = std::nearbyint(v[i] / D);
      if (!(r >= -128.0f && r <= 127.0f) || r * D != v[i]) return false;
      q[i] = static_cast<int8_t>(r);
    }
    *d = h;
    return true;
  };
  static constexpr int kLikely[] = {63, -128, 15, -32, 127, 31};
  for (int c : kLikely)
    if (try_c(c)) return true;
  for (int c = -128; c <= 127; ++c)
    if (c != 0 && try_c(c)) return true;
  return false;
}

// Super-block runs of columns [n0, n1) of per-block values `v` ([N * kb]) into q / d; false on a miss.
bool super_rows(const float* v, int64_t kb, int blocks, int64_t supers, int64_t n0, int64_t n1, int8_t* q,
                uint16_t* d) {
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t j = 0; j < supers; ++j) {
      const int64_t b0 = j * blocks, cnt = std::min<int64_t>(blocks, kb - b0);
      if (!super_run(v + n * kb + b0, cnt, q + n * kb + b0, d + n * supers + j)) return false;
    }
  return true;
}

// Packs source rows [n0, n1) of w into p; n0 is a multiple of 16, so calls on
// different row ranges write disjoint panels. Returns the range of the codes packed.
CodeRange pack_rows(const kernels::QuantizedMatrix& w, const SuperScales& sup, PackedX16& p, int64_t n0,
                    int64_t n1) {
  const int64_t blob = w.blob_bytes(), kb = p.k_blocks, BL = w.block_size;
  uint8_t index[256] = {};  // lut4: a code's index in p.lut
  for (int i = 15; i >= 0 && p.lut4; --i) index[p.lut[i]] = static_cast<uint8_t>(i);
  CodeRange range;
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t pi = n / 16, c = n % 16;
    for (int64_t b = 0; b < kb; ++b) {
      uint8_t* blk = p.data.data() + pi * p.panel_stride + p.super_bytes + b * p.block_stride;
      const float s = w.scales[n * kb + b];
      if (p.super_blocks > 0) {
        const int64_t j = b >> p.super_shift;
        uint8_t* head = p.data.data() + pi * p.panel_stride + j * p.super_stride;
        std::memcpy(head + 2 * c, &sup.d[static_cast<size_t>(n * sup.supers + j)], 2);
        blk[c] = static_cast<uint8_t>(sup.q[static_cast<size_t>(n * kb + b)]);
        if (p.has_mins) {
          std::memcpy(head + 32 + 2 * c, &sup.dm[static_cast<size_t>(n * sup.supers + j)], 2);
          blk[p.mins_offset + c] = static_cast<uint8_t>(sup.qm[static_cast<size_t>(n * kb + b)]);
        }
      } else if (p.scales_fp16) {
        const uint16_t h = float_to_fp16(s);
        std::memcpy(blk + 2 * c, &h, 2);
      } else {
        std::memcpy(blk + 4 * c, &s, 4);
      }
      if (p.has_mins && p.super_blocks == 0) std::memcpy(blk + p.mins_offset + 4 * c, &w.mins[n * kb + b], 4);
      if (p.has_zp) blk[p.zp_offset + c] = static_cast<uint8_t>(w.zero_point(n, b));
      const uint8_t* src = w.codes + (n * kb + b) * blob;
      uint8_t* codes = blk + p.header_bytes;
      const int64_t valid = std::min<int64_t>(BL, w.K - b * BL);  // codes past K stay 0
      if (p.lut4) {  // 8-bit codes as their indices in p.lut, in bits 4's layout
        auto q = [&](int64_t j) -> uint8_t { return j < valid ? index[src[j]] : 0; };
        for (int64_t g = 0; g < BL / 8; ++g)
          for (int i = 0; i < 4; ++i)
            codes[g * 64 + 4 * c + i] = static_cast<uint8_t>(q(8 * g + i) | (q(8 * g + 4 + i) << 4));
        for (int64_t j = 0; j < valid; ++j) range.add(src[j]);
      } else if (w.bits == 4) {
        auto q = [&](int64_t j) -> uint8_t { return j < valid ? (src[j / 2] >> ((j & 1) * 4)) & 0xf : 0; };
        for (int64_t g = 0; g < BL / 8; ++g)
          for (int i = 0; i < 4; ++i)
            codes[g * 64 + 4 * c + i] = static_cast<uint8_t>(q(8 * g + i) | (q(8 * g + 4 + i) << 4));
        for (int64_t j = 0; j < valid; ++j) range.add((src[j / 2] >> ((j & 1) * 4)) & 0xf);
      } else if (p.bits == 5 || p.bits == 6) {
        // Low nibbles as int4 (k 8g+i low, 8g+4+i high); the high bits in the plane of step j / 4.
        auto q = [&](int64_t j) -> int { return j < valid ? src[j] - p.code_lo : 0; };
        for (int64_t g = 0; g < BL / 8; ++g)
          for (int i = 0; i < 4; ++i)
            codes[g * 64 + 4 * c + i] =
                static_cast<uint8_t>((q(8 * g + i) & 0xf) | ((q(8 * g + 4 + i) & 0xf) << 4));
        uint8_t* planes = blk + p.high_planes_offset();
        const int64_t lane = c < 8 ? 4 * c : 32 + 4 * (c - 8);
        const int high = p.bits - 4, per_plane = 8 / high;  // high bits per code, steps per plane
        for (int64_t j = 0; j < valid; ++j) {
          const int64_t step = j / 4;
          const int h = q(j) >> 4;
          planes[(step / per_plane) * 64 + lane + j % 4] |=
              static_cast<uint8_t>(h << (high * (step % per_plane)));
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

std::vector<uint8_t> distinct_codes(const kernels::QuantizedMatrix& w, size_t most) {
  bool seen[256] = {};
  size_t n = 0;
  const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
  for (int64_t r = 0; r < w.N; ++r)
    for (int64_t b = 0; b < kb; ++b) {
      const uint8_t* src = w.codes + (r * kb + b) * blob;
      const int64_t valid = std::min<int64_t>(w.block_size, w.K - b * w.block_size);
      for (int64_t j = 0; j < valid; ++j) {
        const int c = w.bits == 4 ? (src[j / 2] >> ((j & 1) * 4)) & 0xf : src[j];
        if (seen[c]) continue;
        seen[c] = true;
        if (++n > most) return {};
      }
    }
  std::vector<uint8_t> r;
  for (int c = 0; c < 256; ++c)
    if (seen[c]) r.push_back(static_cast<uint8_t>(c));
  return r;
}

SuperScales find_super_scales(const kernels::QuantizedMatrix& w, ThreadPool* pool) {
  SuperScales s;
  const int64_t kb = w.k_blocks();
  if (w.block_size > 128 || 256 % w.block_size != 0 || kb < 2) return s;
  s.blocks = 256 / w.block_size;
  s.supers = (kb + s.blocks - 1) / s.blocks;
  s.q.resize(static_cast<size_t>(w.N * kb));
  s.d.resize(static_cast<size_t>(w.N * s.supers));
  if (w.mins != nullptr) s.qm.resize(s.q.size()), s.dm.resize(s.d.size());
  const auto rows = [&](int64_t n0, int64_t n1) {
    return super_rows(w.scales, kb, s.blocks, s.supers, n0, n1, s.q.data(), s.d.data()) &&
           (w.mins == nullptr ||
            super_rows(w.mins, kb, s.blocks, s.supers, n0, n1, s.qm.data(), s.dm.data()));
  };
  const int64_t first = std::min<int64_t>(16, w.N);
  if (!rows(0, first)) return SuperScales{};
  constexpr int64_t kRows = 256;
  const int64_t chunks = (w.N - first + kRows - 1) / kRows;
  std::vector<uint8_t> ok(static_cast<size_t>(chunks), 1);
  const auto task = [&](int64_t i) {
    const int64_t n0 = first + i * kRows;
    ok[static_cast<size_t>(i)] = rows(n0, std::min(w.N, n0 + kRows)) ? 1 : 0;
  };
  if (pool != nullptr) {
    pool->parallel_for(chunks, task);
  } else {
    for (int64_t i = 0; i < chunks; ++i) task(i);
  }
  for (uint8_t o : ok)
    if (o == 0) return SuperScales{};
  s.ok = true;
  return s;
}

PackedX16 PackedX16::with_panels(int64_t n) const {
  PackedX16 r;
  r.bits = bits, r.block = block, r.K = K, r.k_blocks = k_blocks;
  r.has_zp = has_zp, r.scales_fp16 = scales_fp16, r.has_mins = has_mins, r.uniform_zp = uniform_zp;
  r.code_lo = code_lo, r.code_hi = code_hi;
  r.lut4 = lut4;
  std::memcpy(r.lut, lut, sizeof lut);
  r.mins_offset = mins_offset, r.zp_offset = zp_offset, r.header_bytes = header_bytes;
  r.block_stride = block_stride, r.panel_stride = panel_stride;
  r.super_blocks = super_blocks, r.super_shift = super_shift, r.super_stride = super_stride;
  r.super_bytes = super_bytes;
  r.panels = n;
  r.N = 16 * n;
  r.data = AlignedBytes::uninitialized(panel_stride * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(r.data.data() + static_cast<size_t>(i) * panel_stride,
                data.data() + static_cast<size_t>(i % panels) * panel_stride, panel_stride);
  return r;
}

PackedX16 pack_x16(const kernels::QuantizedMatrix& w, bool fp16_scales,
                   const std::function<void(int64_t)>& rows_consumed, ThreadPool* pool, bool fold_uniform_zp,
                   bool int5, bool super, bool int6, bool lut4) {
  NBITS_ASSERT(x16_packable(w));
  PackedX16 p;
  const SuperScales sup = super ? find_super_scales(w, pool) : SuperScales{};
  p.bits = w.bits;
  if ((int5 || int6 || lut4) && w.bits == 8 && w.block_size % 16 == 0) {
    const CodeRange r = code_range(w);
    std::vector<uint8_t> distinct;
    // lut4 only where no zero points are stored (the GGUF types: none, or one folded value).
    const bool no_zp = w.zero_points == nullptr || (fold_uniform_zp && uniform_zero_point(w) >= 0);
    if (lut4 && no_zp) distinct = distinct_codes(w, 16);
    if (!distinct.empty()) {
      p.bits = 4, p.lut4 = true, p.code_lo = r.lo;
      std::fill(std::begin(p.lut), std::end(p.lut), static_cast<uint8_t>(r.lo));
      std::copy(distinct.begin(), distinct.end(), p.lut);
    } else if (int5 && r.hi - r.lo <= 31 && w.block_size % 32 == 0) {  // more than 16 codes
      p.bits = 5, p.code_lo = r.lo;
    } else if (int6 && r.hi - r.lo <= 63) {
      p.bits = 6, p.code_lo = r.lo;
    }
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
  if (sup.ok) {
    p.super_blocks = sup.blocks;
    while ((1 << p.super_shift) < sup.blocks) ++p.super_shift;
    p.super_stride = p.has_mins ? 64 : 32;
    p.super_bytes = p.super_stride * static_cast<size_t>(sup.supers);
    p.mins_offset = 16;
    p.zp_offset = p.mins_offset + (p.has_mins ? 16 : 0);
  } else {
    p.scales_fp16 = fp16_scales && scales_fit_fp16(w);
    p.mins_offset = p.scales_fp16 ? 32 : 64;
    p.zp_offset = p.mins_offset + (p.has_mins ? 64 : 0);
  }
  p.header_bytes = p.zp_offset + (p.has_zp ? kZpBytes : 0);
  const size_t code_bytes = static_cast<size_t>(16) * w.block_size * p.bits / 8;
  p.block_stride = p.header_bytes + code_bytes;
  p.panel_stride = p.super_bytes + p.block_stride * static_cast<size_t>(p.k_blocks);
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
      ranges[static_cast<size_t>(c0 + i)] = pack_rows(w, sup, p, n0, n1);
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
