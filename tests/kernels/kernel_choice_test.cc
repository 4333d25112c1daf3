// Kernel choice by measurement (kernels/kernel_choice.h): the fastest candidate is chosen and
// written to the cache file, a later process takes it from the file without measuring, and a
// corrupt or foreign file is ignored with one warning line, never trusted. The dispatch point's
// choice among x16 micro-kernels keeps the reference's bits.
#include "kernels/kernel_choice.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/cpu_features.h"
#include "base/timer.h"
#include "kernels/matmul_nbits.h"
#include "kernels/panel_matmul.h"
#include "kernels/random_weight.h"
#include "kernels/ref/matmul_nbits_ref.h"
#include "kernels/x16_matmul.h"
#include "quant/packed_x16.h"

namespace nbits::kernels {
namespace {

using nbits::kernels::testing::RandomWeight;

// Spins for `us` microseconds: a candidate of known cost.
void spin(double us) {
  Stopwatch sw;
  while (sw.elapsed_ms() * 1e3 < us) {
  }
}

// Each test: its own cache file, the process's decisions forgotten before and after.
class KernelChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A forced level (the RVV-only and arm64 suites run under NBITS_ISA) turns the choice off;
    // these tests are about the choice, so the level stays as detected with it (cpu_features()
    // keeps what it read first) and NBITS_ISA is set aside until TearDown.
    (void)cpu_features();
    if (const char* isa = std::getenv("NBITS_ISA")) isa_ = isa;
    ::unsetenv("NBITS_ISA");
    file_ = (std::filesystem::temp_directory_path() /
             ("nbits_kernel_choice_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".tsv"))
                .string();
    std::filesystem::remove(file_);
    if (const char* f = std::getenv("NBITS_KERNEL_CHOICE_FILE")) outer_file_ = f;
    ::setenv("NBITS_KERNEL_CHOICE_FILE", file_.c_str(), 1);
    ::unsetenv("NBITS_KERNEL_CHOICE");
    reset_kernel_choices_for_testing();
  }
  void TearDown() override {
    if (isa_) ::setenv("NBITS_ISA", isa_->c_str(), 1);
    std::filesystem::remove(file_);
    if (outer_file_)  // ctest's (tests/CMakeLists.txt): the build folder's file
      ::setenv("NBITS_KERNEL_CHOICE_FILE", outer_file_->c_str(), 1);
    else
      ::unsetenv("NBITS_KERNEL_CHOICE_FILE");
    ::unsetenv("NBITS_KERNEL_CHOICE");
    reset_kernel_choices_for_testing();
  }
  std::string read() const {
    std::ifstream in(file_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void write(const std::string& text) const { std::ofstream(file_) << text; }
  // Candidates "slow" (spins 400 us, counted in *slow_runs) and "fast" (20 us).
  std::vector<KernelCandidate> candidates(int* slow_runs = nullptr, int* fast_runs = nullptr) const {
    return {{"slow", [slow_runs] { spin(400), slow_runs != nullptr && ++*slow_runs; }},
            {"fast", [fast_runs] { spin(20), fast_runs != nullptr && ++*fast_runs; }}};
  }
  std::string header() const {
    return "nbits-kernel-choice\t1\ncpu\t" + kernel_choice_cpu() + "\nbuild\t" + kernel_choice_build() + "\n";
  }
  std::string file_;
  std::optional<std::string> isa_, outer_file_;
};

TEST_F(KernelChoiceTest, MeasuresPicksTheFastestAndWritesTheFile) {
  int slow = 0, fast = 0;
  EXPECT_EQ(choose_kernel("gemv test", candidates(&slow, &fast)), 1u);
  EXPECT_GE(slow, 4);  // a warm-up and at least three timed rounds each
  EXPECT_GE(fast, 4);
  // Decided once per process: no second measurement.
  const int slow_before = slow;
  EXPECT_EQ(choose_kernel("gemv test", candidates(&slow, &fast)), 1u);
  EXPECT_EQ(slow, slow_before);
  const auto log = kernel_choices();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].from, KernelChoice::From::kMeasured);
  ASSERT_EQ(log[0].us.size(), 2u);
  EXPECT_GT(log[0].us[0], log[0].us[1]);
  EXPECT_NE(describe_kernel_choices().find("gemv test: fast (measured: slow "), std::string::npos)
      << describe_kernel_choices();
  const std::string text = read();
  EXPECT_NE(text.find(header()), std::string::npos) << text;
  EXPECT_NE(text.find("gemv test\tfast\tslow="), std::string::npos) << text;
}

TEST_F(KernelChoiceTest, ALaterProcessTakesTheFileWithoutMeasuring) {
  EXPECT_EQ(choose_kernel("gemm test", candidates()), 1u);
  reset_kernel_choices_for_testing();  // as a new process
  // The file says "fast"; the candidates now cost the other way round and are never run.
  int runs = 0;
  std::vector<KernelCandidate> swapped = {{"slow", [&] { ++runs; }}, {"fast", [&] { spin(400), ++runs; }}};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(choose_kernel("gemm test", swapped), 1u);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(runs, 0);
  ASSERT_EQ(kernel_choices().size(), 1u);
  EXPECT_EQ(kernel_choices()[0].from, KernelChoice::From::kCacheFile);
  EXPECT_NE(kernel_choices()[0].why.find(file_), std::string::npos);
  // Other candidates for the key than the file's: measured again.
  std::vector<KernelCandidate> three = candidates();
  three.push_back({"third", [] { spin(200); }});
  reset_kernel_choices_for_testing();
  EXPECT_EQ(choose_kernel("gemm test", three), 1u);
  EXPECT_EQ(kernel_choices()[0].from, KernelChoice::From::kMeasured);
}

TEST_F(KernelChoiceTest, CorruptOrForeignFilesAreIgnoredWithOneWarning) {
  const std::string entry = "gemv test\tslow\tslow=1\tfast=2\n";  // would pick "slow" if trusted
  const struct {
    const char* what;
    std::string text;
    bool warns;
  } cases[] = {
      {"garbage", "\x01\x02 not a choice file\n", true},
      {"another CPU",
       "nbits-kernel-choice\t1\ncpu\tSome Other CPU\nbuild\t" + kernel_choice_build() + "\n" + entry, true},
      {"a time that is no number", header() + "gemv test\tslow\tslow=abc\tfast=2\n", true},
      {"a choice that is no candidate", header() + "gemv test\tthird\tslow=1\tfast=2\n", true},
      {"too few fields", header() + "gemv test\tslow\n", true},
      {"another version", "nbits-kernel-choice\t2\ncpu\t" + kernel_choice_cpu() + "\n", true},
      // An earlier build on this CPU: stale, not foreign (every rebuild makes one): no warning.
      {"an earlier build", "nbits-kernel-choice\t1\ncpu\t" + kernel_choice_cpu() + "\nbuild\told\n" + entry,
       false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    reset_kernel_choices_for_testing();
    write(c.text);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(choose_kernel("gemv test", candidates()), 1u);
    const std::string err = ::testing::internal::GetCapturedStderr();
    if (c.warns) {
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
      EXPECT_NE(err.find("ignoring the kernel choice file " + file_), std::string::npos) << err;
    } else {
      EXPECT_EQ(err, "");
    }
    EXPECT_EQ(kernel_choices()[0].from, KernelChoice::From::kMeasured);
    EXPECT_NE(read().find(header()), std::string::npos) << "the file is rewritten whole";
  }
}

TEST_F(KernelChoiceTest, OffTakesTheTableOrder) {
  ::setenv("NBITS_KERNEL_CHOICE", "off", 1);
  int runs = 0;
  std::vector<KernelCandidate> c = {{"first", [&] { spin(400), ++runs; }}, {"second", [&] { ++runs; }}};
  EXPECT_EQ(choose_kernel("gemv off", c), 0u);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(kernel_choices()[0].why, "NBITS_KERNEL_CHOICE=off");
  EXPECT_FALSE(std::filesystem::exists(file_));
  EXPECT_EQ(kernel_choice_file(), "");
}

// The dispatch point (make_matmul_nbits) on a CPU with several int8 sets: the chosen micro-kernels
// are named in the choices and give the reference's bits for M = 1 and M > 1.
TEST_F(KernelChoiceTest, DispatchChoiceKeepsTheReferenceBits) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (const bool asym : {false, true}) {
    for (const int bits : {4, 8}) {
      RandomWeight rw(bits, 32, 200, 75, asym, rng);
      auto packed = make_matmul_nbits(rw.w, Compute::kInt8);
      for (const int64_t M : {1, 3, 17}) {
        std::vector<float> A(static_cast<size_t>(M * rw.w.K));
        std::uniform_real_distribution<float> u(-1, 1);
        for (auto& x : A) x = u(rng);
        std::vector<float> want(static_cast<size_t>(M * rw.w.N)), got(want.size());
        matmul_nbits_ref_int8(rw.w, A.data(), M, want.data(), nullptr);
        packed->run(A.data(), M, got.data(), nullptr, pool);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << "bits " << bits << (asym ? " asym" : " sym") << " M=" << M << " via "
                                     << packed->kernel_name(M);
      }
      // Every choice names a candidate, and the packed weight runs the chosen ones.
      for (const auto& c : kernel_choices()) {
        ASSERT_LT(c.chosen, c.names.size());
        if (c.from == KernelChoice::From::kMeasured) {
          EXPECT_EQ(c.us.size(), c.names.size());
        }
      }
    }
  }
#if defined(__x86_64__)
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx512vnni && cpu.avx512vl && cpu.avx2) {
    // Zmm, ymm (EVEX) and AVX2 GEMVs at least: measured, and the file holds them.
    bool gemv = false;
    for (const auto& c : kernel_choices())
      if (c.key.rfind("gemv ", 0) == 0) {
        gemv = true;
        EXPECT_GE(c.names.size(), 3u) << c.key;
      }
    EXPECT_TRUE(gemv) << describe_kernel_choices();
    EXPECT_NE(read().find("qgemv_q4x16"), std::string::npos) << read();
  }
#endif
}

// The few-row role: a weight whose GEMM for 2..8 rows (gemm_small) is another set's runs it for
// those rows and the chosen GEMM above, with the reference's bits either way (every int8 GEMM
// gives the same bits), and names the kernel that ran.
TEST_F(KernelChoiceTest, FewRowGemmRunsTwoToEightRowsWithTheSameBits) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  RandomWeight rw(4, 32, 200, 75, false, rng);
  quant::PackedX16 p = quant::pack_x16(rw.w);
  const std::vector<X16Int8Kernels> sets = x16_int8_alternatives(p);
  const X16Int8Kernels* other = nullptr;
  for (const auto& k : sets)
    if (k.gemm != sets[0].gemm && k.tiles_bytes == nullptr && sets[0].tiles_bytes == nullptr) other = &k;
  if (other == nullptr)
    GTEST_SKIP() << "one int8 GEMM for this format on this CPU (" << cpu_features().describe() << ")";
  X16Int8Kernels k = sets[0];
  k.gemm_small = other->gemm;
  k.gemm_small_name = other->gemm_name;
  const auto packed = make_panel_int8(std::move(p), k);
  for (const int64_t M : {1, 2, 3, 5, 8, 9, 13}) {
    EXPECT_STREQ(packed->kernel_name(M), M == 1             ? k.gemv_name
                                         : M >= 2 && M <= 8 ? other->gemm_name
                                                            : k.gemm_name);
    std::vector<float> A(static_cast<size_t>(M * rw.w.K));
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& x : A) x = u(rng);
    std::vector<float> want(static_cast<size_t>(M * rw.w.N)), got(want.size());
    matmul_nbits_ref_int8(rw.w, A.data(), M, want.data(), nullptr);
    packed->run(A.data(), M, got.data(), nullptr, pool);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "M=" << M << " via " << packed->kernel_name(M);
  }
}

}  // namespace
}  // namespace nbits::kernels
