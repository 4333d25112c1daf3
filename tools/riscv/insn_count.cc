// Counts the guest instructions of one MatMulNBits call (M=1 decode, or M rows, Qwen2.5-0.5B layer
// shapes) per kernel set under QEMU, between the insncount plugin's region markers. Built and run
// by tools/riscv/insn_count.sh against the IME-emulated cross build (which corrects for the
// emulation sequence).  usage: insn_count KERNEL_SET BITS [fp32|fp16] [M]
// BITS 4 or 8, or lut4: int8 codes of MXFP4's 15 levels (what a GGUF MXFP4 / IQ4 weight becomes),
// which the RISC-V sets pack as 4-bit indices into the weight's table.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/matmul_nbits.h"

using namespace nbits;
using namespace nbits::kernels;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: insn_count KERNEL_SET 4|8|lut4 [fp32|fp16] [M]\n");
    return 2;
  }
  const std::string want = argv[1];
  const bool lut4 = std::string(argv[2]) == "lut4";
  const int bits = lut4 ? 8 : std::atoi(argv[2]);
  const uint8_t levels[15] = {116, 120, 122, 124, 125, 126, 127, 128, 129, 130, 131, 132, 134, 136, 140};
  const int64_t M = argc > 4 ? std::atoll(argv[4]) : 1;
  if (M < 1) {
    std::fprintf(stderr, "insn_count: M must be >= 1\n");
    return 2;
  }
  // One Qwen2.5-0.5B decoder layer: qkv, o, gate+up, down (N x K).
  const int64_t shapes[4][2] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}};
  std::mt19937 rng(1);
  ThreadPool pool(1);
  uint64_t vmadots = 0;
  for (const auto& s : shapes) {
    QuantizedMatrix w;
    w.N = s[0];
    w.K = s[1];
    w.bits = bits;
    w.block_size = 32;
    std::vector<uint8_t> codes(static_cast<size_t>(w.N * w.k_blocks() * w.blob_bytes()));
    for (auto& c : codes) c = lut4 ? levels[rng() % 15] : static_cast<uint8_t>(rng());
    std::vector<float> scales(static_cast<size_t>(w.N * w.k_blocks()), 0.01f);
    std::vector<float> a(static_cast<size_t>(M * w.K)), y(static_cast<size_t>(M * w.N));
    for (auto& x : a) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f;
    w.codes = codes.data();
    w.scales = scales.data();
    const MatMulNBitsKernel* k = nullptr;
    for (const auto& e : matmul_nbits_kernels())
      if (want == e.name) k = &e;
    if (k == nullptr || !k->supports(w, cpu_features())) {
      std::fprintf(stderr, "kernel set %s not available\n", want.c_str());
      return 1;
    }
    PackOptions opts;
    opts.fp16_scales = argc > 3 && std::string(argv[3]) == "fp16";
    auto packed = k->pack_opts(w, opts);
    asm volatile("slti x0, x0, 0x7a1");  // region begin
    packed->run(a.data(), M, y.data(), nullptr, pool);
    asm volatile("slti x0, x0, 0x7a2");  // region end
    vmadots += static_cast<uint64_t>((w.N + 15) / 16) * w.k_blocks() * (32 / 8) * 4;
    std::printf("%s N=%lld K=%lld bytes=%zu y0=%g\n", packed->kernel_name(M), static_cast<long long>(w.N),
                static_cast<long long>(w.K), packed->packed_bytes(), y[0]);
  }
  // The emulated-vmadot correction of insn_count.sh is known for the GEMV only.
  if (M == 1) std::printf("vmadot_if_ime %llu\n", static_cast<unsigned long long>(vmadots));
  return 0;
}
