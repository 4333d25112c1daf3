// AVX2+FMA+F16C and AVX-512 (F/BW/VL/DQ) instantiations of the flash-attention tile of
// kernels/attention_tile_inl.h and of the decode kernel of kernels/attention_decode_inl.h
// (declarations; no intrinsics here).
#pragma once

#include "kernels/attention_decode_inl.h"
#include "kernels/attention_tile_inl.h"

namespace nbits::kernels {

attn::TileKernels attention_tile_avx2();
attn::TileKernels attention_tile_avx512();
attn::DecodeKernels attention_decode_avx2();
attn::DecodeKernels attention_decode_avx512();

}  // namespace nbits::kernels
