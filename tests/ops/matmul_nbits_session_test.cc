// SessionOptions::fp16_scales reaches every MatMulNBits node (through OpBuild's
// options and kernels::PackOptions): its kernel names say "x16h" and the packed
// weights shrink; the default keeps fp32 scales.
#include <gtest/gtest.h>

#include <string>

#include "base/cpu_features.h"
#include "graph/session.h"
#include "support/shared_data.h"

namespace nbits::graph {
namespace {

size_t packed_bytes(const Session& s) {
  size_t n = 0;
  for (const auto& m : s.matmul_nbits_info()) n += m.packed_bytes;
  return n;
}

TEST(MatMulNBitsSession, Fp16ScalesOptionReachesEveryNode) {
  for (const char* variant : {"onnx_int4", "onnx_int4_asym_acc0", "onnx_int8"}) {
    const std::string path =
        testing::shared_path(std::string("models/stories260K/") + variant + "/model.onnx");
    NBITS_REQUIRE_SHARED(path);
    SCOPED_TRACE(variant);
    SessionOptions o32, o16;
    o16.fp16_scales = true;
    auto s32 = Session::load(path, o32), s16 = Session::load(path, o16);
    ASSERT_FALSE(s16->matmul_nbits_info().empty());
    for (const auto& m : s32->matmul_nbits_info())
      EXPECT_EQ(m.kernel.find("x16h"), std::string::npos) << m.node << ": " << m.kernel;
    const CpuFeatures& cpu = cpu_features();
    if (!(cpu.avx2 && cpu.fma && cpu.f16c)) continue;  // no kernel set with fp16 scales here
    for (const auto& m : s16->matmul_nbits_info())
      EXPECT_NE(m.kernel.find("x16h"), std::string::npos) << m.node << ": " << m.kernel;
    EXPECT_LT(packed_bytes(*s16), packed_bytes(*s32));
  }
}

}  // namespace
}  // namespace nbits::graph
