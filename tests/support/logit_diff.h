// max |a - ref| / max |ref|: how far two logit vectors are apart, relative to the reference's scale.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

namespace nbits::testing {

inline double rel_diff(std::span<const float> a, std::span<const float> ref) {
  double d = 0, mx = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - ref[i]));
    mx = std::max(mx, std::fabs(static_cast<double>(ref[i])));
  }
  return d / mx;
}

}  // namespace nbits::testing
