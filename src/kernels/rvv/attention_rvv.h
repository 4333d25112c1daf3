// RVV 1.0 instantiations of the flash-attention tile of kernels/attention_tile_inl.h and of the
// decode kernel of kernels/attention_decode_inl.h (declarations; no intrinsics here). The vectors
// are fixed at 256 bits (8 floats, the K1's VLEN): call only where attention_rvv_supported().
#pragma once

#include "kernels/attention_decode_inl.h"
#include "kernels/attention_tile_inl.h"

namespace nbits::kernels {

// True where the build has RVV intrinsics and the hart's VLEN is 256 (what the kernels assume).
bool attention_rvv_supported();
attn::TileKernels attention_tile_rvv();
attn::DecodeKernels attention_decode_rvv();

}  // namespace nbits::kernels
