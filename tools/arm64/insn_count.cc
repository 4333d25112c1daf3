// Counts the guest instructions of one Qwen2.5-0.5B decoder layer's MatMulNBits (qkv, o, gate+up,
// down) per kernel set under qemu-aarch64, between the insncount_a64 plugin's region markers.
// Built and run by tools/arm64/insn_count.sh.  usage: insn_count KERNEL_SET BITS M [fp16]
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
  if (argc < 4) {
    std::fprintf(stderr, "usage: insn_count KERNEL_SET BITS M [fp16]\n");
    return 2;
  }
  const std::string want = argv[1];
  // lut4: int8 codes of MXFP4's 15 levels (a GGUF MXFP4 / IQ4 weight), packed as 4-bit table indices.
  const bool lut4 = std::string(argv[2]) == "lut4";
  const int bits = lut4 ? 8 : std::atoi(argv[2]);
  const uint8_t levels[15] = {116, 120, 122, 124, 125, 126, 127, 128, 129, 130, 131, 132, 134, 136, 140};
  const int64_t M = std::atoll(argv[3]);
  // One Qwen2.5-0.5B decoder layer: qkv, o, gate+up, down (N x K).
  const int64_t shapes[4][2] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}};
  std::mt19937 rng(1);
  ThreadPool pool(1);
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
    opts.fp16_scales = argc > 4 && std::string(argv[4]) == "fp16";
    auto packed = k->pack_opts(w, opts);
    asm volatile("hint #122");  // region begin
    packed->run(a.data(), M, y.data(), nullptr, pool);
    asm volatile("hint #123");  // region end
    std::printf("%s N=%lld K=%lld y0=%g\n", packed->kernel_name(M), static_cast<long long>(w.N),
                static_cast<long long>(w.K), y[0]);
  }
  return 0;
}
