// Rotary position embedding of one head (shared by RotaryEmbedding and
// GroupQueryAttention's fused rotary): the first 2 * half elements rotate by the
// angles whose cos/sin are c[i], s[i]; the rest pass through.
#pragma once

#include <cstdint>

namespace nbits::ops {

// interleaved: pairs (x[2i], x[2i+1]); else halves (x[i], x[i + half]).
inline void rotate(const float* x, const float* c, const float* s, int64_t half, bool interleaved, int64_t h,
                   float* y) {
  if (interleaved) {
    for (int64_t i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      y[2 * i] = a * c[i] - b * s[i];
      y[2 * i + 1] = b * c[i] + a * s[i];
    }
  } else {
    for (int64_t i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      y[i] = a * c[i] - b * s[i];
      y[i + half] = b * c[i] + a * s[i];
    }
  }
  for (int64_t i = 2 * half; i < h; ++i) y[i] = x[i];
}

}  // namespace nbits::ops
