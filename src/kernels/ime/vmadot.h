// SpacemiT X60 IME vmadot: encoding, compiler-allocated-register wrapper, and the exact
// scalar emulation used under QEMU (IME_EMULATE=1, CMake option NBITS_IME_EMULATE).
//
// smt.vmadot{u,us,su,} vd, vs1, vs2 (K1, VLEN 256, vtype e8/m1 with vl 32):
//   vs1 = A[4][8] int8 row-major, vs2 = B^T[4][8] (column n's 8 k values contiguous),
//   {vd, vd+1} = C[4][4] int32 row-major;  C[i][j] += sum_k A[i][k] * B^T[j][k].
// Encoding: R-type, opcode custom-1 (0x2b), funct7 0x71, funct3 = 0 uu, 1 us, 2 su, 3 ss
// (first letter = A = vs1): word = 0xe200002b | f3 << 12 | vd << 7 | vs1 << 15 | vs2 << 20.
// We use vmadotsu only: A signed (quantized activations), B unsigned (raw weight codes).
#pragma once

#include <cstdint>

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>
#define NBITS_HAVE_IME_KERNELS 1
#endif

namespace nbits::kernels::ime {

// The instruction word of smt.vmadot* (funct3 as above); tests compare emitted code to it.
constexpr uint32_t vmadot_word(unsigned funct3, unsigned vd, unsigned vs1, unsigned vs2) {
  return 0xe200002bu | (funct3 << 12) | (vd << 7) | (vs1 << 15) | (vs2 << 20);
}

// Scalar model of one vmadot (any signedness): the semantics the kernels rely on.
inline void vmadot_model(int32_t c[16], const uint8_t a[32], const uint8_t bt[32], bool a_signed,
                         bool b_signed) {
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 8; ++k) {
        const int32_t x = a_signed ? static_cast<int8_t>(a[8 * i + k]) : a[8 * i + k];
        const int32_t y = b_signed ? static_cast<int8_t>(bt[8 * j + k]) : bt[8 * j + k];
        c[4 * i + j] += x * y;
      }
}

#if defined(NBITS_HAVE_IME_KERNELS)

// The real instruction, with register names filled in by the compiler ("%0" -> "v8").
#define NBITS_VMADOTSU_INSN(D, S1, S2) ".insn r 0x2b, 2, 0x71, " D ", " S1 ", " S2 "\n\t"

#if defined(IME_EMULATE) && IME_EMULATE
// One k step of the emulation: t5 = A[i][k] (signed), t6 = B^T[j][k] (unsigned), t4 += t5*t6.
#define NBITS_IME_EMU_K(k) "lb t5, " #k "(t1)\n\tlbu t6, " #k "(t2)\n\tmul t5, t5, t6\n\taddw t4, t4, t5\n\t"
// Spills A, B^T and C with whole-register stores (independent of vl/vtype), computes the
// 16 outputs in scalar code, reloads C. Saves every scalar register it uses: clobbers nothing.
#define NBITS_VMADOTSU(D, S1, S2) \
  "addi sp, sp, -192\n\t"                                                                          \
  "sd t0, 128(sp)\n\tsd t1, 136(sp)\n\tsd t2, 144(sp)\n\tsd t3, 152(sp)\n\t"                       \
  "sd t4, 160(sp)\n\tsd t5, 168(sp)\n\tsd t6, 176(sp)\n\t"                                         \
  "vs1r.v " S1 ", (sp)\n\taddi t0, sp, 32\n\tvs1r.v " S2 ", (t0)\n\taddi t0, sp, 64\n\tvs2r.v " D \
  ", (t0)\n\t"                                                                                     \
  "li t0, 0\n\t"                                                                                   \
  "7711:\n\t"                                                                                      \
  "srli t1, t0, 2\n\tslli t1, t1, 3\n\tadd t1, t1, sp\n\t"                                         \
  "andi t2, t0, 3\n\tslli t2, t2, 3\n\tadd t2, t2, sp\n\taddi t2, t2, 32\n\t"                      \
  "slli t3, t0, 2\n\tadd t3, t3, sp\n\tlw t4, 64(t3)\n\t" NBITS_IME_EMU_K(0) NBITS_IME_EMU_K(1)    \
      NBITS_IME_EMU_K(2) NBITS_IME_EMU_K(3) NBITS_IME_EMU_K(4) NBITS_IME_EMU_K(5) NBITS_IME_EMU_K(6) \
          NBITS_IME_EMU_K(7) "sw t4, 64(t3)\n\t"                                                   \
                             "addi t0, t0, 1\n\tli t1, 16\n\tblt t0, t1, 7711b\n\t"                \
                             "addi t0, sp, 64\n\tvl2re32.v " D ", (t0)\n\t"                        \
                             "ld t0, 128(sp)\n\tld t1, 136(sp)\n\tld t2, 144(sp)\n\tld t3, 152(sp)\n\t" \
                             "ld t4, 160(sp)\n\tld t5, 168(sp)\n\tld t6, 176(sp)\n\t"              \
                             "addi sp, sp, 192\n\t"
#else
#define NBITS_VMADOTSU(D, S1, S2) NBITS_VMADOTSU_INSN(D, S1, S2)
#endif

// acc(4x4 int32) += a(4x8 int8, signed) * bt(4x8 uint8, unsigned)^T. Sets vtype to e8/m1,
// vl 32 (what vmadot needs) and tells the compiler that vl/vtype changed.
inline vint32m2_t vmadotsu(vint32m2_t acc, vint8m1_t a, vuint8m1_t bt) {
  asm("vsetvli zero, %3, e8, m1, ta, ma\n\t" NBITS_VMADOTSU("%0", "%1", "%2")
      : "+vr"(acc)
      : "vr"(a), "vr"(bt), "r"(32)
      : "vl", "vtype");
  return acc;
}

// One int4 16-k step for 16 columns (4 groups of 4): w_g holds 4 columns x 8 bytes whose low
// nibbles are the B^T tile for k0..7 and high nibbles for k8..15, so
//   c_g += a0 * lo(w_g)^T + a1 * hi(w_g)^T.
// One asm block: one vsetvli for 8 vmadots, unpacked tiles in two scratch registers.
inline void vmadotsu_q4x16_step(vint32m2_t& c0, vint32m2_t& c1, vint32m2_t& c2, vint32m2_t& c3, vint8m1_t a0,
                                vint8m1_t a1, vuint8m1_t w0, vuint8m1_t w1, vuint8m1_t w2, vuint8m1_t w3) {
  vuint8m1_t lo, hi;
#define NBITS_Q4_GROUP(C, W)                                                                    \
  "vand.vi %[lo], " W ", 15\n\tvsrl.vi %[hi], " W ", 4\n\t" NBITS_VMADOTSU(C, "%[a0]", "%[lo]") \
      NBITS_VMADOTSU(C, "%[a1]", "%[hi]")
  asm("vsetvli zero, %[n], e8, m1, ta, ma\n\t" NBITS_Q4_GROUP("%[c0]", "%[w0]")
          NBITS_Q4_GROUP("%[c1]", "%[w1]") NBITS_Q4_GROUP("%[c2]", "%[w2]") NBITS_Q4_GROUP("%[c3]", "%[w3]")
      : [c0] "+vr"(c0), [c1] "+vr"(c1), [c2] "+vr"(c2), [c3] "+vr"(c3), [lo] "=&vr"(lo), [hi] "=&vr"(hi)
      : [a0] "vr"(a0), [a1] "vr"(a1), [w0] "vr"(w0), [w1] "vr"(w1), [w2] "vr"(w2), [w3] "vr"(w3), [n] "r"(32)
      : "vl", "vtype");
#undef NBITS_Q4_GROUP
}

// One lut4 16-k step for 16 columns: as vmadotsu_q4x16_step, with each nibble replaced by the
// 8-bit code it indexes in `table` (vrgather; lanes 0..15 hold the weight's codes), so the tiles
// are the int8 step's.
inline void vmadotsu_q4lx16_step(vint32m2_t& c0, vint32m2_t& c1, vint32m2_t& c2, vint32m2_t& c3, vint8m1_t a0,
                                 vint8m1_t a1, vuint8m1_t table, vuint8m1_t w0, vuint8m1_t w1, vuint8m1_t w2,
                                 vuint8m1_t w3) {
  const auto step = [&](vint32m2_t& c, vuint8m1_t w) {
    const vuint8m1_t lo = __riscv_vrgather_vv_u8m1(table, __riscv_vand_vx_u8m1(w, 15, 32), 32);
    const vuint8m1_t hi = __riscv_vrgather_vv_u8m1(table, __riscv_vsrl_vx_u8m1(w, 4, 32), 32);
    asm("vsetvli zero, %[n], e8, m1, ta, ma\n\t" NBITS_VMADOTSU("%[c]", "%[a0]", "%[lo]")
            NBITS_VMADOTSU("%[c]", "%[a1]", "%[hi]")
        : [c] "+vr"(c)
        : [a0] "vr"(a0), [a1] "vr"(a1), [lo] "vr"(lo), [hi] "vr"(hi), [n] "r"(32)
        : "vl", "vtype");
  };
  step(c0, w0);
  step(c1, w1);
  step(c2, w2);
  step(c3, w3);
}

// One int8 8-k step for 16 columns: c_g += a * w_g^T (w_g = 4 columns x 8 k codes).
inline void vmadotsu_q8x16_step(vint32m2_t& c0, vint32m2_t& c1, vint32m2_t& c2, vint32m2_t& c3, vint8m1_t a,
                                vuint8m1_t w0, vuint8m1_t w1, vuint8m1_t w2, vuint8m1_t w3) {
  asm("vsetvli zero, %[n], e8, m1, ta, ma\n\t" NBITS_VMADOTSU("%[c0]", "%[a]", "%[w0]")
          NBITS_VMADOTSU("%[c1]", "%[a]", "%[w1]") NBITS_VMADOTSU("%[c2]", "%[a]", "%[w2]")
              NBITS_VMADOTSU("%[c3]", "%[a]", "%[w3]")
      : [c0] "+vr"(c0), [c1] "+vr"(c1), [c2] "+vr"(c2), [c3] "+vr"(c3)
      : [a] "vr"(a), [w0] "vr"(w0), [w1] "vr"(w1), [w2] "vr"(w2), [w3] "vr"(w3), [n] "r"(32)
      : "vl", "vtype");
}

#endif  // NBITS_HAVE_IME_KERNELS

}  // namespace nbits::kernels::ime
