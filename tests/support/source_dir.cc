// The source tree's path, compiled into this one file only: a define on every test file made
// each of them miss ccache in a clone at another path (CI's), since the path is in their
// preprocessed text.
#include "support/source_dir.h"

namespace nbits::testing {

const char* source_dir() { return NBITS_SOURCE_DIR; }

}  // namespace nbits::testing
