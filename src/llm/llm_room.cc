// Room llm: see docs/design.md.
namespace nbits {}
