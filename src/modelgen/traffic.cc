#include "modelgen/traffic.h"

#include "base/error.h"

namespace nbits::modelgen {

int64_t matmul_nbits_bytes(int64_t K, int64_t N, const QuantSpec& q) {
  NBITS_CHECK(q.bits == 4 || q.bits == 8 || q.bits == 2, "unsupported bits ", q.bits);
  NBITS_CHECK(q.block >= 16 && (q.block & (q.block - 1)) == 0, "block size ", q.block,
              " must be a power of two >= 16");
  const int64_t k_blocks = (K + q.block - 1) / q.block;
  const int64_t codes = N * k_blocks * (q.block * q.bits / 8);
  NBITS_CHECK(q.scale_bytes == 4 || q.scale_bytes == 2, "scale bytes must be 4 or 2, got ", q.scale_bytes);
  const int64_t scales = N * k_blocks * q.scale_bytes;
  const int64_t zps = q.asym ? N * ((k_blocks * q.bits + 7) / 8) : 0;
  return codes + scales + zps;
}

int64_t kv_bytes_per_position(const ModelShape& s) { return s.layers * 2 * s.kv_heads * s.head_size * 4; }

TokenTraffic token_traffic(const ModelShape& s, const QuantSpec& q, int64_t context) {
  TokenTraffic t;
  const int64_t h = s.hidden;
  const int64_t per_layer = matmul_nbits_bytes(h, s.qkv_out(), q) + matmul_nbits_bytes(s.q_out(), h, q) +
                            2 * matmul_nbits_bytes(h, s.intermediate, q) +
                            matmul_nbits_bytes(s.intermediate, h, q);
  t.layer_matmul_bytes = s.layers * per_layer;
  t.lm_head_bytes = matmul_nbits_bytes(h, s.vocab, q);
  // Two norm weights per layer, the final norm, the qkv bias, one fp32 embedding row.
  t.small_bytes = (s.layers * 2 + 1) * h * 4 + (s.qkv_bias ? s.layers * s.qkv_out() * 4 : 0) + h * 4;
  t.kv_bytes = context * kv_bytes_per_position(s);
  return t;
}

double floor_ms(int64_t bytes, double gbs) {
  NBITS_CHECK(gbs > 0, "bandwidth must be > 0 GB/s");
  return static_cast<double>(bytes) / (gbs * 1e9) * 1e3;
}

}  // namespace nbits::modelgen
