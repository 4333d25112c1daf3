#include "gguf/quant_map.h"

#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "base/fp16.h"
#include "gguf/block_decode.h"
#include "gguf/iq_block_decode.h"
#include "onnx/wire.h"

namespace nbits::gguf {
namespace {

// "Q4_0, Q4_1, ..." : every type block_format() decodes.
std::string mapped_names() {
  std::string r;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = static_cast<GgmlType>(id);
    if (type_traits(t).name != nullptr && block_format(t).bits != 0)
      r += std::string(r.empty() ? "" : ", ") + type_name(t);
  }
  return r;
}

}  // namespace

float NBitsMatrix::value(int64_t n, int64_t k) const {
  const int64_t kb = k_blocks(), b = k / block_size, j = k % block_size;
  const uint8_t* blk = codes.data() + (n * kb + b) * blob_bytes();
  const int c = bits == 8 ? blk[j] : (blk[j / 2] >> (4 * (j % 2))) & 15;
  int z = 1 << (bits - 1);
  if (!zero_points.empty()) {
    const uint8_t zb = zero_points[static_cast<size_t>(n * zp_row_bytes() + b * bits / 8)];
    z = bits == 8 ? zb : (zb >> (4 * (b % 2))) & 15;
  }
  float v = static_cast<float>(c - z) * scales[static_cast<size_t>(n * kb + b)];
  if (!mins.empty()) v += mins[static_cast<size_t>(n * kb + b)];
  return v;
}

bool maps_to_nbits(GgmlType t) { return block_format(t).bits != 0; }

std::string unmapped_note(GgmlType t) {
  if (!is_iq_lattice_type(t) || maps_to_nbits(t)) return "";
  return "; this nbits was built without ggml's IQ lattices: configure it where Python's gguf package is "
         "installed (pip install gguf)";
}

double mapped_bits_per_weight(GgmlType t) {
  const BlockFormat f = block_format(t);
  NBITS_ASSERT(f.bits != 0);
  return f.bits + (32.0 * (f.mins ? 2 : 1) + (f.zp0 ? f.bits : 0)) / f.block;
}

double file_bits_per_weight(GgmlType t) {
  const TypeTraits tr = type_traits(t);
  return 8.0 * static_cast<double>(tr.bytes) / static_cast<double>(tr.block);
}

NBitsShape nbits_shape(const File& f, const TensorInfo& t) {
  const std::string name = onnx::wire::printable(t.name);
  if (!maps_to_nbits(t.type))
    f.fail("tensor '" + name + "' has type " + type_name(t.type) +
           ", which nbits cannot run as a quantized matmul (" + mapped_names() + ")" + unmapped_note(t.type));
  if (t.ne[2] != 1 || t.ne[3] != 1) f.fail("tensor '" + name + "' " + t.shape_str() + " is not a matrix");
  const BlockFormat fm = block_format(t.type);
  NBitsShape s;
  s.K = t.ne[0];
  s.N = t.ne[1];
  s.bits = fm.bits;
  s.block_size = fm.block;
  s.has_zero_points = fm.zp0;
  s.has_mins = fm.mins;
  return s;
}

NBitsMatrix to_nbits(const File& f, const TensorInfo& t) {
  NBitsMatrix m;
  static_cast<NBitsShape&>(m) = nbits_shape(f, t);
  const BlockFormat fm = block_format(t.type);
  const TypeTraits tr = type_traits(t.type);
  const int64_t kb = m.k_blocks(), blob = m.blob_bytes(), per = tr.block / fm.block;
  m.codes.assign(static_cast<size_t>(m.N * kb * blob), 0);
  m.scales.resize(static_cast<size_t>(m.N * kb));
  if (fm.mins) m.mins.resize(static_cast<size_t>(m.N * kb));
  if (fm.zp0) m.zero_points.assign(static_cast<size_t>(m.N * m.zp_row_bytes()), 0);
  std::vector<uint8_t> codes(static_cast<size_t>(tr.block));
  const int64_t gblocks = m.K / tr.block;
  // The file pages already decoded are let go every 16 MiB, so a large tensor (a 150k-row
  // lm_head) does not hold its whole file range resident beside its converted copy.
  const size_t row_bytes = static_cast<size_t>(gblocks * tr.bytes), kReleaseEvery = size_t{16} << 20;
  size_t released = 0;
  for (int64_t n = 0; n < m.N; ++n) {
    const size_t done = static_cast<size_t>(n) * row_bytes;
    if (f.mapping && done - released >= kReleaseEvery) {
      f.mapping->release(t.bytes.data() + released, done - released);
      released = done;
    }
    for (int64_t g = 0; g < gblocks; ++g) {
      const size_t sb = static_cast<size_t>(n * kb + g * per);
      decode_block(t.type, t.bytes.data() + (n * gblocks + g) * tr.bytes, codes.data(), &m.scales[sb],
                   fm.mins ? &m.mins[sb] : nullptr);
      uint8_t* dst = m.codes.data() + sb * static_cast<size_t>(blob);
      if (fm.bits == 8) {
        std::memcpy(dst, codes.data(), codes.size());
      } else {
        for (size_t e = 0; e < codes.size(); e += 2)
          dst[e / 2] = static_cast<uint8_t>(codes[e] | (codes[e + 1] << 4));
      }
    }
  }
  return m;
}

void append_rows(NBitsMatrix& dst, const NBitsMatrix& src) {
  NBITS_ASSERT(dst.K == src.K && dst.bits == src.bits && dst.block_size == src.block_size &&
               dst.zero_points.empty() == src.zero_points.empty() && dst.mins.empty() == src.mins.empty());
  dst.N += src.N;
  dst.codes.insert(dst.codes.end(), src.codes.begin(), src.codes.end());
  dst.scales.insert(dst.scales.end(), src.scales.begin(), src.scales.end());
  dst.zero_points.insert(dst.zero_points.end(), src.zero_points.begin(), src.zero_points.end());
  dst.mins.insert(dst.mins.end(), src.mins.begin(), src.mins.end());
}

NBitsMatrix take_rows(const NBitsMatrix& m, int64_t n0, int64_t n) {
  NBITS_ASSERT(n0 >= 0 && n >= 0 && n0 + n <= m.N);
  NBitsMatrix r;
  static_cast<NBitsShape&>(r) = m;
  r.N = n;
  const auto rows = [&](const auto& v, int64_t per_row) {
    using V = std::decay_t<decltype(v)>;
    return v.empty() ? V{} : V(v.begin() + n0 * per_row, v.begin() + (n0 + n) * per_row);
  };
  r.codes = rows(m.codes, m.k_blocks() * m.blob_bytes());
  r.scales = rows(m.scales, m.k_blocks());
  r.zero_points = rows(m.zero_points, m.zp_row_bytes());
  r.mins = rows(m.mins, m.k_blocks());
  return r;
}

bool widens_to_float(GgmlType t) {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16 || maps_to_nbits(t);
}

std::vector<float> to_float(const File& f, const TensorInfo& t) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> out(n);
  const uint8_t* p = t.bytes.data();
  switch (t.type) {
    case GgmlType::kF32:
      std::memcpy(out.data(), p, n * 4);
      return out;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t.type == GgmlType::kF16 ? fp16_to_float(h) : bf16_to_float(h);
      }
      return out;
    default:
      break;
  }
  if (!maps_to_nbits(t.type))
    f.fail("tensor '" + onnx::wire::printable(t.name) + "' has type " + type_name(t.type) +
           ", which nbits cannot dequantize (F32, F16, BF16, " + mapped_names() + ")" +
           unmapped_note(t.type));
  TensorInfo rows = t;  // as a matrix [ne0, numel / ne0]
  rows.ne[1] = t.numel() / t.ne[0];
  rows.ne[2] = rows.ne[3] = 1;
  const NBitsMatrix m = to_nbits(f, rows);
  for (int64_t r = 0; r < m.N; ++r)
    for (int64_t k = 0; k < m.K; ++k) out[static_cast<size_t>(r * m.K + k)] = m.value(r, k);
  return out;
}

}  // namespace nbits::gguf
