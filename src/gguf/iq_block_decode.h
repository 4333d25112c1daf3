// ggml's lattice types decoded, without loss, into 8-bit codes (zero point 128) and one scale per
// nbits block; block_decode.h dispatches here. The lattice points come from iq_lattices.h.
//
//   type     ggml block   nbits block  code                           scale
//   IQ2_XXS  256 / 66 B   32           +-point (8, 25, 43)            d*(0.5+s)/4
//   IQ2_XS   256 / 74 B   16           +-point                        d*(0.5+s)/4
//   IQ2_S    256 / 82 B   16           +-point                        d*(0.5+s)/4
//   IQ3_XXS  256 / 98 B   32           +-point (4 .. 62)              d*(0.5+s)/2
//   IQ3_S    256 / 110 B  32           +-point (1 .. 15)              d*(1+2s)
//   IQ1_S    256 / 50 B   32           8*point +- 1 (point -1, 0, 1)  d*(1+2s)/8
//   IQ1_M    256 / 56 B   16           8*point +- 1                   d*(1+2s)/8
//
// The signs: 8 bits per 8 values (IQ2_S, IQ3_S), or 7 bits whose eighth is their parity (ggml's
// ksigns_iq2xs: IQ2_XXS, IQ2_XS, IQ3_XXS). IQ1's value is scale*(point +- 1/8): with the eighth
// folded into the code it is (8*point +- 1) * (scale/8), the same float (one rounding of the same
// product; scale/8 is exact).
#pragma once

#include <cstdint>

#include "gguf/block_decode.h"

namespace nbits::gguf {

// Whether t is one of the seven lattice types.
bool is_iq_lattice_type(GgmlType t);

// The nbits form of a lattice type, or {} when t is not one or this build has no lattices.
BlockFormat iq_block_format(GgmlType t);

// Decodes one block of a lattice type this build has (iq_block_format(t).bits != 0).
void decode_iq_block(GgmlType t, const uint8_t* b, uint8_t* codes, float* scales);

}  // namespace nbits::gguf
