// Room tokenizer: see docs/design.md.
namespace nbits {}
