// RISC-V room tests: every registered MatMulNBits kernel against the scalar reference on
// awkward shapes (odd K, K not a multiple of the block, N not a multiple of 16, M 1..33,
// zero points or not), the RVV activation quantizer against quant::quantize_row_blocks
// (bit-exact), and the vmadot emulation/encoding against the documented examples. Kernel sets
// with a packed fp16-scales format (PackOptions) run in both formats; with fp16 scales the
// reference is computed from the fp16-rounded scales.
// Runs on any host (x86 iterates its own kernels); on riscv64 under QEMU it covers the RVV
// and IME kernels (NBITS_ISA=rvv hides IME).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/ime/ime_probe.h"
#include "kernels/ime/vmadot.h"
#include "kernels/matmul_nbits.h"
#include "kernels/ref/matmul_nbits_ref.h"
#include "kernels/rvv/quantize_a_rvv.h"
#include "quant/quantize_a.h"

namespace nbits::kernels {
namespace {

struct Weight {
  QuantizedMatrix w;
  std::vector<uint8_t> codes, zp;
  std::vector<float> scales;
};

Weight random_weight(int64_t N, int64_t K, int bits, int bs, bool with_zp, std::mt19937& rng) {
  Weight r;
  r.w.N = N;
  r.w.K = K;
  r.w.bits = bits;
  r.w.block_size = bs;
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> sc(0.005f, 0.05f);
  r.codes.resize(static_cast<size_t>(N * r.w.k_blocks() * r.w.blob_bytes()));
  for (auto& c : r.codes) c = static_cast<uint8_t>(byte(rng));
  r.scales.resize(static_cast<size_t>(N * r.w.k_blocks()));
  for (auto& s : r.scales) s = sc(rng);
  if (with_zp) {
    r.zp.resize(static_cast<size_t>(N * r.w.zp_row_bytes()));
    for (auto& z : r.zp) z = static_cast<uint8_t>(byte(rng));
  }
  r.w.codes = r.codes.data();
  r.w.scales = r.scales.data();
  r.w.zero_points = with_zp ? r.zp.data() : nullptr;
  return r;
}

// `src` with every scale rounded to fp16 (what a kernel packing fp16 scales computes with).
Weight fp16_rounded(const Weight& src) {
  Weight r = src;
  for (auto& s : r.scales) s = fp16_to_float(float_to_fp16(s));
  r.w.codes = r.codes.data();
  r.w.scales = r.scales.data();
  r.w.zero_points = r.zp.empty() ? nullptr : r.zp.data();
  return r;
}

PackOptions scales_opts(bool fp16) {
  PackOptions o;
  o.fp16_scales = fp16;
  return o;
}

// Kernel names of the fp16-scales format carry "16h" (q4t16h, q8n16h, q4x16h, ...).
bool says_fp16(const PackedMatMul& p, int64_t M) {
  return std::string(p.kernel_name(M)).find("16h_") != std::string::npos;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// |error| allowed for output (m, n): a small multiple of sum_k |a|*|w| (fp32 summation order
// may differ; a wrong int32 block dot, one unit = sa*sb, is far above it).
std::vector<double> error_bounds(const QuantizedMatrix& w, const float* A, int64_t M, double rel) {
  std::vector<double> bound(static_cast<size_t>(M * w.N));
  for (int64_t n = 0; n < w.N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double s = 0.0;
      for (int64_t k = 0; k < w.K; ++k) {
        const int64_t b = k / w.block_size;
        s += std::fabs(A[m * w.K + k]) * std::fabs((w.code(n, k) - w.zero_point(n, b)) * w.scale(n, b));
      }
      bound[m * w.N + n] = rel * s + 1e-6;
    }
  return bound;
}

struct Shape {
  int64_t M, N, K;
  int bits, bs;
  bool zp;
};

TEST(RvvKernelTable, EveryKernelMatchesReference) {
  const std::vector<Shape> shapes = {
      {1, 16, 32, 4, 32, false},   {1, 40, 96, 4, 32, true},   {4, 33, 200, 4, 32, false},
      {5, 17, 129, 4, 128, false}, {1, 20, 256, 4, 128, true}, {33, 24, 64, 4, 16, false},
      {3, 31, 77, 8, 32, false},   {1, 48, 160, 8, 32, true},  {6, 18, 300, 8, 128, true},
      {2, 16, 48, 4, 16, true},    {7, 9, 33, 8, 16, false},   {1, 1, 16, 4, 16, false},
  };
  std::mt19937 rng(1234);
  ThreadPool pool(2);
  const CpuFeatures& cpu = cpu_features();
  int checked = 0, checked_fp16 = 0;
  for (const Shape& s : shapes) {
    const Weight wt = random_weight(s.N, s.K, s.bits, s.bs, s.zp, rng);
    const Weight rounded = fp16_rounded(wt);
    const std::vector<float> A = random_floats(static_cast<size_t>(s.M * s.K), rng);
    const std::vector<float> bias = random_floats(static_cast<size_t>(s.N), rng);
    for (bool fp16 : {false, true}) {
      const QuantizedMatrix& ref_w = fp16 ? rounded.w : wt.w;  // what the kernel must compute with
      std::vector<float> ref_i8(static_cast<size_t>(s.M * s.N)), ref_f32(ref_i8.size());
      matmul_nbits_ref_int8(ref_w, A.data(), s.M, ref_i8.data(), bias.data());
      matmul_nbits_ref_fp32(ref_w, A.data(), s.M, ref_f32.data(), bias.data());
      const std::vector<double> tight = error_bounds(ref_w, A.data(), s.M, 2e-6);
      const std::vector<double> loose = error_bounds(ref_w, A.data(), s.M, 2e-5);
      for (const MatMulNBitsKernel& k : matmul_nbits_kernels()) {
        if (!k.supports(wt.w, cpu)) continue;
        if (fp16 && k.pack_with == nullptr) continue;  // one format: covered by the fp32 pass
        const bool int8 = k.compute == Compute::kInt8;
        auto packed = k.pack_opts(wt.w, scales_opts(fp16));
        EXPECT_EQ(says_fp16(*packed, s.M), fp16) << k.name << ": " << packed->kernel_name(s.M);
        std::vector<float> y(ref_i8.size(), std::nanf(""));
        packed->run(A.data(), s.M, y.data(), bias.data(), pool);
        const std::vector<float>& ref = int8 ? ref_i8 : ref_f32;
        const std::vector<double>& tol = int8 ? tight : loose;
        int bad = 0;
        for (size_t i = 0; i < y.size() && bad < 5; ++i)
          if (!(std::fabs(y[i] - ref[i]) <= tol[i])) {
            ++bad;
            ADD_FAILURE() << k.name << " (" << packed->kernel_name(s.M) << ") M=" << s.M << " N=" << s.N
                          << " K=" << s.K << " bits=" << s.bits << " bs=" << s.bs << " zp=" << s.zp
                          << " at m=" << i / s.N << " n=" << i % s.N << ": got " << y[i] << " want "
                          << ref[i];
          }
        ++checked;
        if (fp16) ++checked_fp16;
      }
    }
  }
#if defined(NBITS_ARCH_RISCV)
  EXPECT_GE(checked_fp16, static_cast<int>(shapes.size()) * 2);  // n16 int8 + fp32 (+ IME)
#endif
  EXPECT_GT(checked, static_cast<int>(shapes.size()));  // at least the reference pair ran
}

#if defined(NBITS_ARCH_RISCV)
TEST(RvvKernelTable, RiscvKernelsAreRegisteredAndChosen) {
  std::mt19937 rng(7);
  Weight wt = random_weight(32, 64, 4, 32, false, rng);
  const CpuFeatures& cpu = cpu_features();
  ASSERT_TRUE(cpu.rvv) << "run under qemu-riscv64 -cpu rv64,v=true,vlen=256,...";
  ASSERT_EQ(cpu.vlen_bits, 256);
  const std::string int8 = make_matmul_nbits(wt.w, Compute::kInt8)->kernel_name(1);
  const std::string fp32 = make_matmul_nbits(wt.w, Compute::kFp32)->kernel_name(4);
  EXPECT_EQ(int8, ime::ime_usable() ? "qgemv_q4t16_ime" : "qgemv_q4n16_rvv");
  EXPECT_EQ(fp32, "gemm_q4n16_4x16_fp32_rvv");
  const char* isa = std::getenv("NBITS_ISA");
  if (isa != nullptr && std::string(isa) == "rvv") EXPECT_FALSE(ime::ime_usable());
}

// Every RISC-V set packs fp16 scales: "16h" names, 32 bytes less per (panel, block) record
// (the zero points stay 16 bytes), dispatch honours the option, and a matrix whose scales do
// not fit fp16 keeps the fp32 format, bitwise.
TEST(RvvKernelTable, RiscvSetsPackFp16Scales) {
  std::mt19937 rng(17);
  ThreadPool pool(1);
  int seen = 0;
  for (int bits : {4, 8})
    for (bool zp : {false, true}) {
      Weight wt = random_weight(37, 64, bits, 32, zp, rng);  // 3 panels x 2 blocks
      for (const MatMulNBitsKernel& k : matmul_nbits_kernels()) {
        const std::string name = k.name;
        if (name.find("rvv") == std::string::npos && name.find("ime") == std::string::npos) continue;
        if (!k.supports(wt.w, cpu_features())) continue;
        SCOPED_TRACE(name + " bits=" + std::to_string(bits) + " zp=" + std::to_string(zp));
        ASSERT_NE(k.pack_with, nullptr);
        auto p32 = k.pack_opts(wt.w, scales_opts(false)), p16 = k.pack_opts(wt.w, scales_opts(true));
        const size_t codes = 16 * 32 * bits / 8, zpb = zp ? 16 : 0, records = 3 * 2;
        EXPECT_EQ(p32->packed_bytes(), records * (64 + zpb + codes));
        EXPECT_EQ(p16->packed_bytes(), records * (32 + zpb + codes));
        for (int64_t M : {1, 2}) {
          EXPECT_FALSE(says_fp16(*p32, M)) << p32->kernel_name(M);
          EXPECT_TRUE(says_fp16(*p16, M)) << p16->kernel_name(M);
        }
        wt.scales[5] = 7e4f;  // beyond fp16: keeps fp32 scales
        auto big16 = k.pack_opts(wt.w, scales_opts(true)), big32 = k.pack(wt.w);
        wt.scales[5] = 0.01f;
        EXPECT_FALSE(says_fp16(*big16, 1)) << big16->kernel_name(1);
        EXPECT_EQ(big16->packed_bytes(), big32->packed_bytes());
        for (int64_t M : {1, 5}) {
          const std::vector<float> A = random_floats(static_cast<size_t>(M * 64), rng);
          std::vector<float> y16(static_cast<size_t>(M * 37), NAN), y32(y16.size(), NAN);
          big16->run(A.data(), M, y16.data(), nullptr, pool);
          big32->run(A.data(), M, y32.data(), nullptr, pool);
          EXPECT_EQ(0, std::memcmp(y16.data(), y32.data(), y16.size() * sizeof(float))) << "M=" << M;
        }
        ++seen;
      }
    }
  EXPECT_EQ(seen, 4 * (ime::ime_usable() ? 3 : 2));
  for (Compute c : {Compute::kInt8, Compute::kFp32}) {
    Weight wt = random_weight(32, 64, 4, 32, true, rng);
    EXPECT_TRUE(says_fp16(*make_matmul_nbits(wt.w, c, scales_opts(true)), 1));
  }
}

// pack_with reports finished source rows in increasing order, ending at N, and the packed
// result does not depend on the callback.
TEST(RvvKernelTable, RiscvSetsReportConsumedRows) {
  std::mt19937 rng(23);
  ThreadPool pool(1);
  const Weight wt = random_weight(1000, 96, 4, 32, true, rng);
  const std::vector<float> A = random_floats(96 * 3, rng);
  int seen = 0;
  for (const MatMulNBitsKernel& k : matmul_nbits_kernels()) {
    if (k.pack_with == nullptr || !k.supports(wt.w, cpu_features())) continue;
    for (bool fp16 : {false, true}) {
      SCOPED_TRACE(std::string(k.name) + (fp16 ? " fp16" : " fp32"));
      std::vector<int64_t> calls;
      PackOptions o = scales_opts(fp16);
      o.rows_consumed = [&](int64_t n) { calls.push_back(n); };
      auto with = k.pack_opts(wt.w, o), without = k.pack_opts(wt.w, scales_opts(fp16));
      ASSERT_FALSE(calls.empty());
      EXPECT_EQ(calls.back(), 1000);
      for (size_t i = 1; i < calls.size(); ++i) EXPECT_GT(calls[i], calls[i - 1]);
      EXPECT_GE(calls.size(), 3u);  // reported as it goes, not only at the end
      std::vector<float> y1(1000 * 3), y2(y1.size());
      with->run(A.data(), 3, y1.data(), nullptr, pool);
      without->run(A.data(), 3, y2.data(), nullptr, pool);
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));
      ++seen;
    }
  }
  EXPECT_GE(seen, 4);  // n16 int8 + fp32, both formats (+ IME)
}

TEST(ImeProbe, MaskMatchesBuildMode) {
#if defined(IME_EMULATE) && IME_EMULATE
  EXPECT_NE(ime::ime_core_mask(), 0u) << "emulated vmadot must be usable on every core";
#else
  // Under stock QEMU the real vmadot traps: the SIGILL-guarded probe must say so and survive.
  const char* expect = std::getenv("NBITS_EXPECT_IME");
  if (expect != nullptr) EXPECT_EQ(ime::ime_core_mask() != 0, std::string(expect) == "1");
#endif
  ime::pin_thread_to_ime_cores();  // must be harmless on any machine
  const std::string why = ime::ime_describe();
  EXPECT_EQ(why.rfind("ime: ", 0), 0u) << why;
  if (ime::ime_core_mask() == 0) EXPECT_NE(why.find("none"), std::string::npos) << why;
}
TEST(RvvQuantizeA, BitExactWithReference) {
  std::mt19937 rng(99);
  for (int bs : {16, 32, 128}) {
    for (int64_t K : {1, 16, 47, 130, 300}) {
      std::vector<float> a = random_floats(static_cast<size_t>(K), rng);
      if (K >= 16) {  // exact ties at amax = 127: 0.5, 1.5, 2.5, -0.5, -2.5 round half to even
        const float ties[] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.5f, -3.5f};
        std::memcpy(a.data(), ties, sizeof ties);
      }
      const int64_t kb = (K + bs - 1) / bs;
      std::vector<int8_t> q0(static_cast<size_t>(kb * bs), 7), q1(q0.size(), 9);
      std::vector<float> s0(static_cast<size_t>(kb)), s1(s0.size()), bsum(s0.size());
      std::vector<int32_t> sum(s0.size());
      quant::quantize_row_blocks(a.data(), K, bs, q0.data(), s0.data(), bsum.data());
      rvv::quantize_row_blocks_rvv(a.data(), K, bs, q1.data(), s1.data(), sum.data());
      EXPECT_EQ(q0, q1) << "bs=" << bs << " K=" << K;
      EXPECT_EQ(s0, s1) << "bs=" << bs << " K=" << K;
      for (int64_t b = 0; b < kb; ++b) {
        int32_t want = 0;
        for (int j = 0; j < bs; ++j) want += q0[b * bs + j];
        EXPECT_EQ(sum[b], want);
      }
    }
  }
}

#endif  // NBITS_ARCH_RISCV

// docs-ai ime_extension.md 5.1.6 (../shared/docs/ime-k1-x60.md 1.3): A rows 0..7, 1..8, 2..9,
// 4..11; B^T rows 0..7, 1..8, 2..9, {11,4..10}: C row 0 = 140 168 196 224.
void worked_example(uint8_t a[32], uint8_t bt[32]) {
  const int a0[4] = {0, 1, 2, 4};
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 8; ++k) a[8 * i + k] = static_cast<uint8_t>(a0[i] + k);
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 8; ++k) bt[8 * j + k] = static_cast<uint8_t>(j + k);
  bt[24] = 11;
  for (int k = 1; k < 8; ++k) bt[24 + k] = static_cast<uint8_t>(3 + k);
}

TEST(Vmadot, ModelReproducesDocumentedExample) {
  uint8_t a[32], bt[32];
  worked_example(a, bt);
  int32_t c[16] = {};
  ime::vmadot_model(c, a, bt, true, true);
  EXPECT_EQ(c[0], 140);
  EXPECT_EQ(c[1], 168);
  EXPECT_EQ(c[2], 196);
  EXPECT_EQ(c[3], 224);
  EXPECT_EQ(ime::vmadot_word(3, 16, 0, 8), 0xe280382bu);   // smt.vmadot v16, v0, v8
  EXPECT_EQ(ime::vmadot_word(2, 20, 2, 10), 0xe2a12a2bu);  // smt.vmadotsu v20, v2, v10
  EXPECT_EQ(ime::vmadot_word(0, 18, 1, 9), 0xe290892bu);   // smt.vmadotu v18, v1, v9
}

#if defined(NBITS_HAVE_IME_KERNELS)
// The words our asm macro assembles to, read back from the object (never executed).
extern "C" const uint32_t nbits_test_vmadot_words[2];
asm(".pushsection .rodata\n.balign 4\n.globl "
    "nbits_test_vmadot_words\nnbits_test_vmadot_words:\n\t" NBITS_VMADOTSU_INSN("v20", "v2", "v10")
        NBITS_VMADOTSU_INSN("v8", "v10", "v11") ".popsection\n");

TEST(Vmadot, EmittedWordsMatchDocumentedEncoding) {
  EXPECT_EQ(nbits_test_vmadot_words[0], 0xe2a12a2bu);  // smt.vmadotsu v20, v2, v10 (doc table)
  EXPECT_EQ(nbits_test_vmadot_words[1], ime::vmadot_word(2, 8, 10, 11));
}

TEST(Vmadot, InstructionReproducesDocumentedExample) {
  if (ime::ime_core_mask() == 0) GTEST_SKIP() << "no IME here (real vmadot would SIGILL)";
  ime::pin_thread_to_ime_cores();
  uint8_t a[32], bt[32];
  worked_example(a, bt);
  int32_t want[16], got[16];
  for (int i = 0; i < 16; ++i) want[i] = got[i] = 1000 * i;  // vmadot accumulates
  ime::vmadot_model(want, a, bt, true, false);
  vint32m2_t acc = __riscv_vle32_v_i32m2(got, 16);
  acc = ime::vmadotsu(acc, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(a), 32),
                      __riscv_vle8_v_u8m1(bt, 32));
  __riscv_vse32_v_i32m2(got, acc, 16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], want[i]) << "lane " << i;
  EXPECT_EQ(got[0] - 0, 140);
  // Signed A x unsigned B at the extremes: -128 * 255.
  std::memset(a, 0x80, 32);
  std::memset(bt, 0xff, 32);
  int32_t z[16] = {};
  acc = __riscv_vle32_v_i32m2(z, 16);
  acc = ime::vmadotsu(acc, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(a), 32),
                      __riscv_vle8_v_u8m1(bt, 32));
  __riscv_vse32_v_i32m2(z, acc, 16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(z[i], -128 * 255 * 8);
}
#endif

}  // namespace
}  // namespace nbits::kernels
