#include "modelgen/weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"

namespace nbits::modelgen {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t row_seed(uint64_t seed, WeightKind kind, int64_t layer, int64_t row) {
  uint64_t s = seed * 0x2545F4914F6CDD1Dull;
  s ^= (static_cast<uint64_t>(kind) + 1) * 0x9E3779B97F4A7C15ull;
  s ^= static_cast<uint64_t>(layer + 1) * 0xD6E8FEB86659FD93ull;
  splitmix64(s);
  s ^= static_cast<uint64_t>(row) * 0xA0761D6478BD642Full;
  splitmix64(s);
  return s;
}

}  // namespace

void weight_row(uint64_t seed, WeightKind kind, int64_t layer, int64_t row, std::span<float> out) {
  uint64_t state = row_seed(seed, kind, layer, row);
  float mean = 0.0f, std = 0.02f;
  if (kind == WeightKind::kInputNorm || kind == WeightKind::kPostNorm) mean = 1.0f, std = 0.1f;
  // Sum of four 16-bit uniforms: mean 2, variance 4/12 -> scale by sqrt(3).
  constexpr float kUnit = 1.0f / 65536.0f;
  const float k = std * 1.7320508f;
  for (float& v : out) {
    const uint64_t r = splitmix64(state);
    const float u =
        static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) * kUnit;
    v = mean + (u - 2.0f) * k;
  }
}

std::vector<float> weight_vector(uint64_t seed, WeightKind kind, int64_t layer, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  weight_row(seed, kind, layer, 0, v);
  return v;
}

void quantize_row(const float* row, int64_t K, const QuantSpec& q, uint8_t* codes, float* scales,
                  uint8_t* zero_points) {
  const int64_t bs = q.block;
  const int64_t k_blocks = (K + bs - 1) / bs;
  const int64_t blob = bs * q.bits / 8;
  const int qmax = (1 << q.bits) - 1;
  if (zero_points) std::memset(zero_points, 0, static_cast<size_t>((k_blocks * q.bits + 7) / 8));
  for (int64_t b = 0; b < k_blocks; ++b) {
    const int64_t k0 = b * bs, k1 = std::min(K, k0 + bs);
    float mn = row[k0], mx = row[k0];
    for (int64_t k = k0; k < k1; ++k) mn = std::min(mn, row[k]), mx = std::max(mx, row[k]);
    float scale;
    int zp;
    if (!q.asym) {
      const float m = std::fabs(mx) > std::fabs(mn) ? mx : mn;
      scale = m / static_cast<float>(-(1 << (q.bits - 1)));
      zp = 1 << (q.bits - 1);
    } else {
      mn = std::min(mn, 0.0f), mx = std::max(mx, 0.0f);
      scale = (mx - mn) / static_cast<float>(qmax);
      float zpf = mn;
      if (scale != 0.0f) zpf = 0.0f - mn / scale;
      zp = zpf < 0.0f ? 0 : zpf > static_cast<float>(qmax) ? qmax : static_cast<int>(std::roundf(zpf));
      if (q.bits == 8) {
        zero_points[b] = static_cast<uint8_t>(zp);
      } else {
        zero_points[b / 2] |= static_cast<uint8_t>(zp << ((b & 1) * 4));
      }
    }
    scales[b] = scale;
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    uint8_t* dst = codes + b * blob;
    std::memset(dst, 0, static_cast<size_t>(blob));
    for (int64_t j = 0; j < bs; ++j) {
      const float v = k0 + j < k1 ? row[k0 + j] : 0.0f;  // padding quantizes a zero
      const float r = std::roundf(v * inv + static_cast<float>(zp));
      const int c = static_cast<int>(std::clamp(r, 0.0f, static_cast<float>(qmax)));
      if (q.bits == 8) {
        dst[j] = static_cast<uint8_t>(c);
      } else {
        dst[j / 2] |= static_cast<uint8_t>(c << ((j & 1) * 4));
      }
    }
  }
}

QuantizedWeight make_quantized(uint64_t seed, WeightKind kind, int64_t layer, int64_t N, int64_t K,
                               const QuantSpec& q, ThreadPool& pool) {
  NBITS_CHECK(q.bits == 4 || q.bits == 8, "make-model: bits must be 4 or 8 (got ", q.bits, ")");
  NBITS_CHECK(q.block >= 16 && (q.block & (q.block - 1)) == 0, "make-model: block size ", q.block,
              " must be a power of two >= 16");
  QuantizedWeight w;
  w.N = N, w.K = K, w.k_blocks = (K + q.block - 1) / q.block;
  const int64_t blob = q.block * q.bits / 8;
  const int64_t zp_row = (w.k_blocks * q.bits + 7) / 8;
  w.codes.resize(static_cast<size_t>(N * w.k_blocks * blob));
  w.scales.resize(static_cast<size_t>(N * w.k_blocks * 4));
  if (q.asym) w.zero_points.resize(static_cast<size_t>(N * zp_row));
  float* scales = reinterpret_cast<float*>(w.scales.data());
  pool.parallel_range(N, 64, [&](int64_t n0, int64_t n1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      weight_row(seed, kind, layer, n, row);
      quantize_row(row.data(), K, q, w.codes.data() + n * w.k_blocks * blob, scales + n * w.k_blocks,
                   q.asym ? w.zero_points.data() + n * zp_row : nullptr);
    }
  });
  return w;
}

std::vector<uint8_t> make_float_matrix(uint64_t seed, WeightKind kind, int64_t layer, int64_t N, int64_t K,
                                       ThreadPool& pool) {
  std::vector<uint8_t> bytes(static_cast<size_t>(N * K * 4));
  float* f = reinterpret_cast<float*>(bytes.data());
  pool.parallel_range(N, 64, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) weight_row(seed, kind, layer, n, std::span<float>(f + n * K, K));
  });
  return bytes;
}

}  // namespace nbits::modelgen
