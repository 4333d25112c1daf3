// The build without ggml's IQ lattices (gguf-py was not found at configure time).
#include "gguf/iq_lattices.h"

namespace nbits::gguf {

const IqLattices* iq_lattices() { return nullptr; }

}  // namespace nbits::gguf
