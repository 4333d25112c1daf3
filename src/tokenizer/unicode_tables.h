// Unicode tables generated at build time by tools/gen_unicode_tables.py (Debian unicode-data).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nbits::tok::tables {
extern const uint16_t gc_stage1[];
extern const uint8_t gc_stage2[];
extern const uint16_t ccc_stage1[];
extern const uint8_t ccc_stage2[];
extern const uint32_t white_space[][2];
extern const size_t white_space_count;
extern const uint32_t decomp_cp[];
extern const uint32_t decomp_offset[];
extern const uint32_t decomp_data[];
extern const size_t decomp_count;
extern const uint64_t comp_key[];
extern const uint32_t comp_value[];
extern const size_t comp_count;
extern const uint32_t fold_from[];
extern const uint32_t fold_to[];
extern const size_t fold_count;
}  // namespace nbits::tok::tables
