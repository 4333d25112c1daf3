// Room onnx: see docs/design.md.
namespace nbits {}
