#include "gguf/types.h"

namespace nbits::gguf {

TypeTraits type_traits(uint32_t id) {
  switch (static_cast<GgmlType>(id)) {
    case GgmlType::kF32:
      return {"F32", 1, 4};
    case GgmlType::kF16:
      return {"F16", 1, 2};
    case GgmlType::kQ4_0:
      return {"Q4_0", 32, 18};
    case GgmlType::kQ4_1:
      return {"Q4_1", 32, 20};
    case GgmlType::kQ5_0:
      return {"Q5_0", 32, 22};
    case GgmlType::kQ5_1:
      return {"Q5_1", 32, 24};
    case GgmlType::kQ8_0:
      return {"Q8_0", 32, 34};
    case GgmlType::kQ8_1:
      return {"Q8_1", 32, 36};
    case GgmlType::kQ2_K:
      return {"Q2_K", 256, 84};
    case GgmlType::kQ3_K:
      return {"Q3_K", 256, 110};
    case GgmlType::kQ4_K:
      return {"Q4_K", 256, 144};
    case GgmlType::kQ5_K:
      return {"Q5_K", 256, 176};
    case GgmlType::kQ6_K:
      return {"Q6_K", 256, 210};
    case GgmlType::kQ8_K:
      return {"Q8_K", 256, 292};
    case GgmlType::kIQ2_XXS:
      return {"IQ2_XXS", 256, 66};
    case GgmlType::kIQ2_XS:
      return {"IQ2_XS", 256, 74};
    case GgmlType::kIQ3_XXS:
      return {"IQ3_XXS", 256, 98};
    case GgmlType::kIQ1_S:
      return {"IQ1_S", 256, 50};
    case GgmlType::kIQ4_NL:
      return {"IQ4_NL", 32, 18};
    case GgmlType::kIQ3_S:
      return {"IQ3_S", 256, 110};
    case GgmlType::kIQ2_S:
      return {"IQ2_S", 256, 82};
    case GgmlType::kIQ4_XS:
      return {"IQ4_XS", 256, 136};
    case GgmlType::kI8:
      return {"I8", 1, 1};
    case GgmlType::kI16:
      return {"I16", 1, 2};
    case GgmlType::kI32:
      return {"I32", 1, 4};
    case GgmlType::kI64:
      return {"I64", 1, 8};
    case GgmlType::kF64:
      return {"F64", 1, 8};
    case GgmlType::kIQ1_M:
      return {"IQ1_M", 256, 56};
    case GgmlType::kBF16:
      return {"BF16", 1, 2};
    case GgmlType::kTQ1_0:
      return {"TQ1_0", 256, 54};
    case GgmlType::kTQ2_0:
      return {"TQ2_0", 256, 66};
    case GgmlType::kMXFP4:
      return {"MXFP4", 32, 17};
    case GgmlType::kNVFP4:
      return {"NVFP4", 64, 36};
    case GgmlType::kQ1_0:
      return {"Q1_0", 128, 18};
  }
  return {};
}

}  // namespace nbits::gguf
