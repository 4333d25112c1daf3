/* insncount_a64.c - minimal QEMU TCG plugin (API v1, QEMU 7.2) counting executed AArch64 guest
 * instructions: all, Advanced SIMD/FP data processing, SIMD/FP loads+stores, SDOT/UDOT/USDOT,
 * SMMLA/UMMLA/USMMLA. The aarch64 twin of ../shared/tools/riscv/insncount.c (same output format).
 * Debian bookworm ships qemu-user with plugin support (-plugin) but no qemu-plugin.h, so the few
 * API declarations needed are repeated here.
 * Build: gcc -O2 -shared -fPIC -o libinsncount_a64.so insncount_a64.c
 * Use:   qemu-aarch64 -plugin ./libinsncount_a64.so[,out=FILE] ... ./prog
 * Counts are exact for single-threaded guests (inline adds are not atomic).
 * Region markers: unallocated HINT space, a NOP on hardware:
 *   begin: asm volatile("hint #122");   end: asm volatile("hint #123");
 * Everything executed between begin and end (summed over all pairs) is reported as region_*. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct {
  const char* target_name;
  struct {
    int min, cur;
  } version;
  bool system_emulation;
  union {
    struct {
      int smp_vcpus, max_vcpus;
    } system;
  };
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb*);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void*);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int, void*);
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn*, qemu_plugin_vcpu_udata_cb_t,
                                            enum qemu_plugin_cb_flags, void*);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb*, enum qemu_plugin_op, void*, uint64_t);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn*, enum qemu_plugin_op, void*,
                                                uint64_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void*);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb*);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb*, size_t);
const void* qemu_plugin_insn_data(const struct qemu_plugin_insn*);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn*);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

enum { C_TOTAL, C_SIMD_ARITH, C_SIMD_MEM, C_DOT, C_MMLA, C_N };
static const char* names[C_N] = {"insns", "simd_arith", "simd_mem", "dot", "mmla"};
static uint64_t counts[C_N], snap[C_N], region[C_N], region_pairs;
static int in_region;
#define MARK_BEGIN (0xd503201fu | (122u << 5)) /* hint #122 */
#define MARK_END (0xd503201fu | (123u << 5))   /* hint #123 */

static void on_marker(unsigned int vcpu, void* udata) {
  uintptr_t u = (uintptr_t)udata;
  uint64_t tail = u >> 1;
  int is_end = u & 1;
  uint64_t now[C_N];
  memcpy(now, counts, sizeof now);
  now[C_TOTAL] -= tail;
  if (!is_end) {
    memcpy(snap, now, sizeof now);
    in_region = 1;
  } else if (in_region) {
    for (int c = 0; c < C_N; c++) region[c] += now[c] - snap[c];
    region_pairs++;
    in_region = 0;
  }
  (void)vcpu;
}
static const char* outfile;

/* Up to two classes per instruction (a dot product is also SIMD arithmetic). */
static int classify(uint32_t w, int out[2]) {
  int n = 0;
  const uint32_t op0 = (w >> 25) & 0xf;
  if ((op0 & 0x7) == 0x7)
    out[n++] = C_SIMD_ARITH; /* x111: SIMD & FP data processing */
  else if ((op0 & 0x5) == 0x4 && ((w >> 26) & 1))
    out[n++] = C_SIMD_MEM; /* x1x0 with V=1: SIMD & FP load/store */
  if ((w & 0xbf00f400u) == 0x2f00e000u || (w & 0xbf00f400u) == 0x0f00e000u || /* [SU]DOT by element */
      (w & 0xbf20fc00u) == 0x0e009400u || (w & 0xbf20fc00u) == 0x2e009400u || /* [SU]DOT vector */
      (w & 0xbfe0fc00u) == 0x0e809c00u || (w & 0xbf00f400u) == 0x0f00f000u || /* USDOT vector / element */
      (w & 0xbf00f400u) == 0x0f80f000u)                                       /* SUDOT element */
    out[n++] = C_DOT;
  if ((w & 0xffe0fc00u) == 0x4e80a400u || (w & 0xffe0fc00u) == 0x6e80a400u || /* SMMLA, UMMLA */
      (w & 0xffe0fc00u) == 0x4e80ac00u)                                       /* USMMLA */
    out[n++] = C_MMLA;
  return n;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  size_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &counts[C_TOTAL], n);
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    if (qemu_plugin_insn_size(insn) != 4) continue;
    uint32_t w;
    memcpy(&w, qemu_plugin_insn_data(insn), 4);
    if (w == MARK_BEGIN || w == MARK_END)
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS,
                                             (void*)(uintptr_t)(((n - i) << 1) | (w == MARK_END)));
    int cls[2];
    int k = classify(w, cls);
    for (int j = 0; j < k; j++)
      qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &counts[cls[j]], 1);
  }
  (void)id;
}

static void at_exit(qemu_plugin_id_t id, void* p) {
  FILE* f = outfile ? fopen(outfile, "w") : stderr;
  if (!f) f = stderr;
  for (int c = 0; c < C_N; c++) fprintf(f, "%s %llu\n", names[c], (unsigned long long)counts[c]);
  if (region_pairs) {
    fprintf(f, "region_pairs %llu\n", (unsigned long long)region_pairs);
    for (int c = 0; c < C_N; c++)
      fprintf(f, "region_%s %llu\n", c == C_TOTAL ? "insns" : names[c], (unsigned long long)region[c]);
  }
  if (f != stderr) fclose(f);
  (void)id;
  (void)p;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info,
                                                               int argc, char** argv) {
  for (int i = 0; i < argc; i++)
    if (!strncmp(argv[i], "out=", 4)) outfile = argv[i] + 4;
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  (void)info;
  return 0;
}
