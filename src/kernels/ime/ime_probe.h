// Run-time detection of SpacemiT IME (vmadot) per core, and thread pinning to those cores.
// On K1 only cores 0-3 (cluster 0) execute vmadot; elsewhere it raises SIGILL.
#pragma once

#include <cstdint>
#include <string>

namespace nbits::kernels::ime {

// Bit c set: CPU c (of this process's affinity set, c < 64) executed a vmadot without SIGILL.
// Probed once, SIGILL-guarded, one short-lived thread pinned per CPU. In IME_EMULATE builds
// the instruction is emulated, so every allowed CPU qualifies.
uint64_t ime_core_mask();

// IME kernels may be chosen: some core passed the probe, and NBITS_ISA does not ask for
// "rvv" / "ref" / "scalar".
bool ime_usable();

// One line for `nbits inspect` / profiles: why IME kernels are or are not used, e.g.
// "ime: cores 0-3 (vmadot probe)", "ime: emulated (IME_EMULATE build)",
// "ime: off (NBITS_ISA=rvv)", "ime: none (vmadot traps on every core)".
std::string ime_describe();

// Restricts the calling thread to IME cores (its current set intersected with
// ime_core_mask(), or the whole mask if they do not meet). Once per thread; cheap after.
void pin_thread_to_ime_cores();

}  // namespace nbits::kernels::ime
