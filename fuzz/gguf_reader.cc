// libFuzzer target: the GGUF reader must refuse any input with nbits::Error
// (never crash, leak, hang or allocate without bound), and what it accepts must
// be readable through every accessor; a small model that reads also goes through the model
// synthesis (its own checks of hyperparameters and tensor shapes).
//   fuzz_gguf_reader CORPUS_DIR -max_total_time=60   (seed: tools/gguf/make_seed.py)
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.h"
#include "gguf/model_builder.h"
#include "gguf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nbits::gguf::File f = nbits::gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf");
    size_t sum = 0;
    for (const auto& [key, v] : f.metadata()) {
      sum += key.size() + v.str.size() + v.strings.size();
      if (v.type == nbits::gguf::ValueType::kArray && v.array_type != nbits::gguf::ValueType::kString)
        for (uint64_t e = 0; e < v.count && e < 64; ++e) sum += static_cast<size_t>(v.float_at(e) != 0);
    }
    for (const auto& t : f.tensors()) sum += t.bytes.empty() ? 0 : t.bytes[t.bytes.size() - 1];
    (void)sum;
    // Bounded sizes only: a real context length or vocabulary would allocate by design.
    const nbits::gguf::Hyperparams hp = nbits::gguf::read_hyperparams(f);
    if (hp.context_length <= 256 && hp.n_vocab <= 256 && hp.n_embd <= 256 && hp.n_layer <= 2 &&
        hp.n_ff <= 1024)
      nbits::gguf::build_model(nbits::gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf"));
  } catch (const nbits::Error&) {
  }
  return 0;
}
