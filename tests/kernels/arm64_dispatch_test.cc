// Which arm64 kernel set dispatch picks. tools/arm64/test.sh runs this binary under qemu-aarch64
// with -cpu max (i8mm), -cpu cortex-a76 (dotprod) and NBITS_ISA=neon, setting NBITS_EXPECT_ARM64
// to the level HWCAP must give; without it the level follows this CPU's HWCAP. Built on arm64 only.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/matmul_nbits.h"

#if defined(__aarch64__)
namespace nbits::kernels {
namespace {

TEST(Arm64Dispatch, PicksTheSetHwcapAllows) {
  // The table's order, not the measured choice (kernel_choice.h), which may rank the levels
  // otherwise on this core (and does, at random, under QEMU).
  ::setenv("NBITS_KERNEL_CHOICE", "off", 1);
  std::mt19937 rng(17);
  QuantizedMatrix w;
  w.N = 32;
  w.K = 64;
  w.bits = 4;
  w.block_size = 32;
  std::vector<uint8_t> codes(static_cast<size_t>(w.N * w.k_blocks() * w.blob_bytes()));
  for (auto& c : codes) c = static_cast<uint8_t>(rng());
  std::vector<float> scales(static_cast<size_t>(w.N * w.k_blocks()), 0.01f);
  w.codes = codes.data();
  w.scales = scales.data();
  const auto i8 = make_matmul_nbits(w, Compute::kInt8), f32 = make_matmul_nbits(w, Compute::kFp32);
  const std::string gemv = i8->kernel_name(1), gemm = i8->kernel_name(2), fgemv = f32->kernel_name(1);
  std::printf("[ arm64    ] cpu: %s; int8 gemv %s, gemm %s; fp32 gemv %s\n",
              cpu_features().describe().c_str(), gemv.c_str(), gemm.c_str(), fgemv.c_str());
  // The level the QEMU leg asks for, else the one this CPU's HWCAP gives.
  const char* env = std::getenv("NBITS_EXPECT_ARM64");
  const CpuFeatures& f = cpu_features();
  const std::string want = env != nullptr && *env != 0 ? env
                           : f.i8mm && f.dotprod       ? "i8mm"
                           : f.dotprod                 ? "dotprod"
                                                       : "neon";
  if (want == "i8mm") {
    EXPECT_TRUE(cpu_features().i8mm && cpu_features().dotprod);
    EXPECT_EQ(gemv, "qgemv_q4x16_dotprod");
    EXPECT_EQ(gemm, "qgemm_q4x16_4x8_i8mm");
  } else if (want == "dotprod") {
    EXPECT_TRUE(cpu_features().dotprod && !cpu_features().i8mm);
    EXPECT_EQ(gemv, "qgemv_q4x16_dotprod");
    EXPECT_EQ(gemm, "qgemm_q4x16_4x8_dotprod");
  } else if (want == "neon") {
    EXPECT_TRUE(cpu_features().neon && !cpu_features().dotprod);
    EXPECT_EQ(gemv, "qgemv_q4x16_neon");
    EXPECT_EQ(gemm, "qgemm_q4x16_4x8_neon");
  } else {
    FAIL() << "NBITS_EXPECT_ARM64=" << want << " (i8mm, dotprod or neon)";
  }
  EXPECT_EQ(fgemv, "fgemv_q4x16_neon");
  if (const char* sve = std::getenv("NBITS_EXPECT_SVE")) {
    EXPECT_EQ(cpu_features().sve, std::string(sve) == "1");
  }
  ::unsetenv("NBITS_KERNEL_CHOICE");
}

}  // namespace
}  // namespace nbits::kernels
#endif  // __aarch64__
