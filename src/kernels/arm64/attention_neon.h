// NEON (baseline ARMv8-A) instantiations of the flash-attention tile of kernels/attention_tile_inl.h
// and of the decode kernel of kernels/attention_decode_inl.h (declarations; no intrinsics here).
#pragma once

#include "kernels/attention_decode_inl.h"
#include "kernels/attention_tile_inl.h"

namespace nbits::kernels {

attn::TileKernels attention_tile_neon();
attn::DecodeKernels attention_decode_neon();

}  // namespace nbits::kernels
