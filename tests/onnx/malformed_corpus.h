// A corpus of malformed ONNX models, generated at test time (nothing in git).
//
//   #include "onnx/malformed_corpus.h"   // tests/ is on the include path
//   nbits::testing::TempDir dir;         // or any empty directory
//   for (const auto& c : nbits::testing::write_malformed_corpus(dir.path(), stories_dir))
//     ... load c.model_path: must throw nbits::Error with one line (nbits run: exit != 0) ...
//
// stories_dir is ../shared/models/stories260K (cases derived from the real exports
// are skipped when it is "" or missing). Each case is a directory dir/<name>/ with a
// model.onnx (and model.onnx.data when the case needs one); genai_config.json and the
// tokenizer files of onnx_int4 are copied next to it when present, so a CLI run reaches
// the model. Header-only: links against nbits_onnx (ModelWriter, wire encoder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "onnx/model.h"
#include "onnx/wire.h"
#include "onnx/writer.h"

namespace nbits::testing {

struct MalformedCase {
  std::string name;        // e.g. "truncate_in_raw_data"
  std::string model_path;  // dir/<name>/model.onnx
};

namespace corpus_detail {

namespace fs = std::filesystem;
using onnx::DataType;
using Bytes = std::vector<uint8_t>;

inline Bytes slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void spit(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline void append(Bytes& out, std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }

inline std::span<const uint8_t> whole(const onnx::wire::Field& f) {
  return {f.start, static_cast<size_t>(f.end - f.start)};
}

// Rebuilds msg, descending into length-delimited fields along `path` (field numbers
// by depth) and re-encoding their lengths. At depth path.size(), edit(field, out, index)
// may emit its own bytes for a field (return true) or leave it verbatim (false).
using Edit = std::function<bool(const onnx::wire::Field&, Bytes&, int index)>;
inline Bytes rebuild(std::span<const uint8_t> msg, const std::vector<uint32_t>& path, const Edit& edit,
                     size_t depth = 0) {
  onnx::wire::Source src{"corpus", msg.data(), msg.size()};
  onnx::wire::Reader r(src, msg);
  onnx::wire::Field f;
  Bytes out;
  int index = 0;
  while (r.next(f)) {
    if (depth == path.size()) {
      if (!edit(f, out, index++)) append(out, whole(f));
    } else if (f.number == path[depth] && f.type == onnx::wire::kLen) {
      const Bytes child = rebuild(f.bytes, path, edit, depth + 1);
      onnx::wire::put_bytes_field(out, f.number, std::span<const uint8_t>(child));
    } else {
      append(out, whole(f));
    }
  }
  return out;
}

// Truncates msg at absolute pointer `cut`, `depth` levels down: the enclosing
// messages keep consistent lengths, so the break is seen by the innermost reader.
inline Bytes cut_at(std::span<const uint8_t> msg, const uint8_t* cut, int depth) {
  if (depth == 0) return Bytes(msg.data(), cut);
  onnx::wire::Source src{"corpus", msg.data(), msg.size()};
  onnx::wire::Reader r(src, msg);
  onnx::wire::Field f;
  Bytes out;
  while (r.next(f)) {
    if (cut >= f.end) {
      append(out, whole(f));
      continue;
    }
    if (f.type == onnx::wire::kLen && cut > f.bytes.data()) {
      const Bytes child = cut_at(f.bytes, cut, depth - 1);
      onnx::wire::put_bytes_field(out, f.number, std::span<const uint8_t>(child));
    } else {
      out.insert(out.end(), f.start, cut);
    }
    break;
  }
  return out;
}

// Fields at `path` (e.g. {7, 5} = every initializer), as spans of the original bytes.
inline std::vector<onnx::wire::Field> fields_at(std::span<const uint8_t> msg,
                                                const std::vector<uint32_t>& path, size_t depth = 0) {
  onnx::wire::Source src{"corpus", msg.data(), msg.size()};
  onnx::wire::Reader r(src, msg);
  onnx::wire::Field f;
  std::vector<onnx::wire::Field> found;
  while (r.next(f)) {
    if (f.number != path[depth]) continue;
    if (depth + 1 == path.size()) {
      found.push_back(f);
    } else if (f.type == onnx::wire::kLen) {
      auto sub = fields_at(f.bytes, path, depth + 1);
      found.insert(found.end(), sub.begin(), sub.end());
    }
  }
  return found;
}

inline Bytes garbage(size_t n, uint64_t seed) {
  Bytes b(n);
  for (auto& x : b) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<uint8_t>(seed >> 56);
  }
  return b;
}

// A valid little model: every initializer inline.
inline onnx::ModelWriter tiny_writer() {
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_opset("com.microsoft", 1);
  w.add_input("x", DataType::kFloat, {onnx::dim_param("batch_size"), onnx::dim_value(64)});
  w.add_output("y", DataType::kFloat, {onnx::dim_param("batch_size"), onnx::dim_value(8)});
  w.add_initializer("B", DataType::kUint8, {8, 2, 16}, Bytes(256, 0x88));
  w.add_initializer("S", DataType::kFloat, {16}, Bytes(64, 0));
  w.add_node("MatMulNBits", "com.microsoft", "mm", {"x", "B", "S"}, {"y"},
             {onnx::int_attr("K", 64), onnx::int_attr("N", 8), onnx::int_attr("bits", 4),
              onnx::int_attr("block_size", 32)});
  return w;
}

// A TensorProto field (graph field 5) built by hand.
inline Bytes tensor_field(const std::function<void(Bytes&)>& body) {
  Bytes t, f;
  body(t);
  onnx::wire::put_bytes_field(f, 5, std::span<const uint8_t>(t));
  return f;
}

// Model bytes: the tiny model's graph with extra graph-level bytes appended.
inline Bytes tiny_plus(const Bytes& extra_graph_fields) {
  const Bytes base = tiny_writer().serialize();
  return rebuild(base, {7}, [&](const onnx::wire::Field& f, Bytes& out, int index) {
    append(out, whole(f));
    // Append once, after the graph's first field.
    if (index == 0) append(out, extra_graph_fields);
    return true;
  });
}

}  // namespace corpus_detail

// Writes the corpus (see the file comment) and returns its cases.
inline std::vector<MalformedCase> write_malformed_corpus(const std::string& dir,
                                                         const std::string& stories_dir) {
  using namespace corpus_detail;
  namespace w = onnx::wire;
  std::vector<MalformedCase> cases;
  const std::string int4_dir = stories_dir.empty() ? "" : stories_dir + "/onnx_int4";
  const bool have_stories = !stories_dir.empty() && fs::exists(int4_dir + "/model.onnx") &&
                            fs::exists(stories_dir + "/onnx_int4_extdata/model.onnx.data");
  auto add_case = [&](const std::string& name) {
    const std::string d = dir + "/" + name;
    fs::create_directories(d);
    for (const char* extra : {"genai_config.json", "tokenizer.json", "tokenizer_config.json"}) {
      std::error_code ec;
      if (have_stories)
        fs::copy_file(int4_dir + "/" + extra, d + "/" + extra, fs::copy_options::overwrite_existing, ec);
    }
    cases.push_back({name, d + "/model.onnx"});
    return d;
  };
  auto add = [&](const std::string& name, const Bytes& model) {
    spit(add_case(name) + "/model.onnx", model);
  };

  // --- not protobuf at all ---------------------------------------------------
  add("empty_file", {});
  add("garbage_small", garbage(17, 1));
  add("garbage_4k", garbage(4096, 2));
  add("garbage_64k", garbage(65536, 3));
  add("all_ff", Bytes(300, 0xff));
  {
    const std::string text = "{\"model\": \"not onnx\"}\n";
    add("json_text", Bytes(text.begin(), text.end()));
  }
  add("no_graph", [] {
    Bytes b;
    w::put_int_field(b, 1, 8);
    w::put_bytes_field(b, 2, std::string("producer"));
    return b;
  }());

  // --- wire-level errors on the tiny model ----------------------------------------
  const Bytes tiny = tiny_writer().serialize();
  {
    Bytes b = tiny;
    w::put_tag(b, 99, w::kStartGroup);
    add("group_wire_type", b);
    Bytes c = tiny;
    c.push_back(static_cast<uint8_t>((9 << 3) | 6));
    add("wire_type_6", c);
    Bytes d = tiny;
    d.push_back(0x00);  // field number 0
    d.push_back(0x01);
    add("field_number_0", d);
    Bytes e = tiny;
    w::put_tag(e, 5, w::kVarint);
    for (int i = 0; i < 11; ++i) e.push_back(0x80);
    e.push_back(0x01);
    add("varint_too_long", e);
  }
  add("graph_as_varint", [&] {
    Bytes b;
    w::put_int_field(b, 1, 8);
    w::put_int_field(b, 7, 12345);
    return b;
  }());
  // Initializer-level corruptions: the tiny model's first initializer (B, uint8 [8,2,16]).
  auto edit_first_init = [&](const std::function<void(const w::Field&, Bytes&)>& fn) {
    return rebuild(tiny, {7}, [&](const w::Field& f, Bytes& out, int) {
      if (f.number != 5) return false;
      // Only B: the first initializer (identified by its 256-byte raw_data).
      if (f.bytes.size() < 256) return false;
      Bytes t;
      w::Source src{"corpus", f.bytes.data(), f.bytes.size()};
      w::Reader r(src, f.bytes);
      w::Field tf;
      while (r.next(tf)) fn(tf, t);
      w::put_bytes_field(out, 5, std::span<const uint8_t>(t));
      return true;
    });
  };
  auto raw_with_len = [&](uint64_t len) {
    return edit_first_init([&](const w::Field& tf, Bytes& t) {
      if (tf.number != 9) return append(t, whole(tf));
      w::put_tag(t, 9, w::kLen);
      w::put_varint(t, len);
      append(t, tf.bytes);
    });
  };
  add("raw_length_huge", raw_with_len(uint64_t{1} << 62));
  add("raw_length_negative", raw_with_len(~uint64_t{0}));
  add("raw_length_past_end", raw_with_len(257));
  add("raw_size_short", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number != 9) return append(t, whole(tf));
        w::put_bytes_field(t, 9, tf.bytes.subspan(0, tf.bytes.size() - 1));
      }));
  add("dims_mismatch", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number == 1 && tf.varint == 8) return w::put_int_field(t, 1, 9);
        append(t, whole(tf));
      }));
  add("dims_overflow", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number != 1) return append(t, whole(tf));
        w::put_int_field(t, 1, int64_t{1} << 40);
      }));
  add("dims_negative", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number == 1 && tf.varint == 2) return w::put_int_field(t, 1, -2);
        append(t, whole(tf));
      }));
  add("data_type_unknown", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number == 2) return w::put_int_field(t, 2, 99);
        append(t, whole(tf));
      }));
  add("data_type_string", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number == 2) return w::put_int_field(t, 2, 8);
        append(t, whole(tf));
      }));
  add("data_type_missing", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number != 2) append(t, whole(tf));
      }));
  add("data_type_wire_type", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number == 2) return w::put_bytes_field(t, 2, std::string("float"));
        append(t, whole(tf));
      }));
  add("dims_wire_type", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number == 1) return w::put_float_field(t, 1, 8.0f);
        append(t, whole(tf));
      }));
  add("raw_data_missing", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number != 9) append(t, whole(tf));
      }));
  add("raw_and_typed_data", edit_first_init([&](const w::Field& tf, Bytes& t) {
        append(t, whole(tf));
        if (tf.number == 9) w::put_int_field(t, 5, 1);
      }));
  add("duplicate_initializer", tiny_plus(tensor_field([](Bytes& t) {
        w::put_int_field(t, 2, 1);
        w::put_bytes_field(t, 8, std::string("S"));
        w::put_bytes_field(t, 9, std::string(4, '\0'));
      })));
  add("typed_count_mismatch", tiny_plus(tensor_field([](Bytes& t) {
        w::put_int_field(t, 1, 3);
        w::put_int_field(t, 2, 7);
        w::put_bytes_field(t, 8, std::string("ids"));
        w::put_packed_int64s(t, 7, std::vector<int64_t>{1, 2});
      })));
  add("node_without_op_type", tiny_plus([] {
        Bytes n, f;
        w::put_bytes_field(n, 1, std::string("x"));
        w::put_bytes_field(f, 1, std::span<const uint8_t>(n));
        return f;
      }()));
  add("constant_tensor_bad_dtype", tiny_plus([] {
        Bytes t, a, n, f;
        w::put_int_field(t, 2, 1234);
        w::put_bytes_field(a, 1, std::string("value"));
        w::put_bytes_field(a, 5, std::span<const uint8_t>(t));
        w::put_int_field(a, 20, 4);
        w::put_bytes_field(n, 2, std::string("c"));
        w::put_bytes_field(n, 4, std::string("Constant"));
        w::put_bytes_field(n, 5, std::span<const uint8_t>(a));
        w::put_bytes_field(f, 1, std::span<const uint8_t>(n));
        return f;
      }()));

  // --- external data (tiny model + a data file) ------------------------------------
  auto add_ext = [&](const std::string& name, const std::string& location, int64_t offset, int64_t length,
                     size_t data_size) {
    onnx::ModelWriter mw = tiny_writer();
    mw.add_external_initializer("E", DataType::kFloat, {4, 4}, location, offset, length);
    const std::string d = add_case(name);
    mw.save(d + "/model.onnx");
    if (data_size != 0) spit(d + "/model.onnx.data", Bytes(data_size, 0x3c));
  };
  add_ext("ext_offset_past_end", "model.onnx.data", 400000, 64, 4096);
  add_ext("ext_length_past_end", "model.onnx.data", 4080, 64, 4096);
  add_ext("ext_offset_overflow", "model.onnx.data", INT64_MAX - 8, 64, 4096);
  add_ext("ext_length_mismatch", "model.onnx.data", 0, 60, 4096);
  add_ext("ext_negative_offset", "model.onnx.data", -64, 64, 4096);
  add_ext("ext_missing_data_file", "model.onnx.data", 0, 64, 0);
  add_ext("ext_location_dotdot", "../model.onnx.data", 0, 64, 4096);
  add_ext("ext_location_inner_dotdot", "sub/../../model.onnx.data", 0, 64, 4096);
  add_ext("ext_location_absolute", "/etc/passwd", 0, 64, 4096);
  add_ext("ext_location_empty", "", 0, 64, 4096);
  {
    add_ext("ext_location_directory", "sub", 0, 64, 4096);
    fs::create_directories(dir + "/ext_location_directory/sub");
  }
  add("ext_no_entries", edit_first_init([&](const w::Field& tf, Bytes& t) {
        if (tf.number != 9) return append(t, whole(tf));
        w::put_int_field(t, 14, 1);  // data_location EXTERNAL without entries
      }));

  // --- derived from the stories260K exports -----------------------------------
  if (have_stories) {
    const Bytes int4 = slurp(int4_dir + "/model.onnx");
    const std::span<const uint8_t> m(int4);
    const auto graph = fields_at(m, {7}).at(0);
    // Raw truncations: inside the graph's length varint, then spread through the graph.
    add("truncate_in_graph_length", Bytes(m.data(), graph.bytes.data() - 1));
    for (int k = 1; k <= 8; ++k) {
      const size_t off = static_cast<size_t>(graph.bytes.data() - m.data()) + graph.bytes.size() * k / 9;
      add("truncate_at_" + std::to_string(off), Bytes(m.data(), m.data() + off));
    }
    // Nested truncations: the enclosing lengths are fixed up so the innermost reader sees the cut.
    const auto inits = fields_at(m, {7, 5});
    std::optional<w::Field> raw;
    for (const auto& t : inits)
      for (const auto& f : fields_at(t.bytes, {9}))
        if (!raw && f.bytes.size() >= 256) raw = f;
    if (raw) {
      add("truncate_in_raw_data", cut_at(m, raw->bytes.data() + raw->bytes.size() / 2, 2));
      add("truncate_in_raw_length", cut_at(m, raw->start + 2, 2));  // tag 1 byte, length >= 2 bytes
    }
    // Inside a two-byte attribute tag (type = field 20) and a two-byte varint (K = 172).
    for (const auto& a : fields_at(m, {7, 1, 5})) {
      const auto types = fields_at(a.bytes, {20});
      if (!types.empty()) {
        add("truncate_in_attribute_tag", cut_at(m, types[0].start + 1, 3));
        break;
      }
    }
    for (const auto& a : fields_at(m, {7, 1, 5})) {
      const auto ints = fields_at(a.bytes, {3});
      if (!ints.empty() && ints[0].varint >= 128) {
        add("truncate_in_attribute_varint", cut_at(m, ints[0].start + 2, 3));
        break;
      }
    }
    add("truncate_in_node_name", [&] {
      const auto names = fields_at(m, {7, 1, 3});
      return names.empty() ? Bytes(garbage(9, 4)) : cut_at(m, names[0].bytes.data() + 2, 2);
    }());
    // External-data export: data file missing, truncated, or entries rewritten.
    const std::string ext_dir = stories_dir + "/onnx_int4_extdata";
    const Bytes ext_model = slurp(ext_dir + "/model.onnx");
    const Bytes ext_data = slurp(ext_dir + "/model.onnx.data");
    add("stories_ext_missing_data", ext_model);
    {
      const std::string d = add_case("stories_ext_truncated_data");
      spit(d + "/model.onnx", ext_model);
      spit(d + "/model.onnx.data", Bytes(ext_data.begin(), ext_data.begin() + ext_data.size() / 2));
    }
    auto rewrite_entry = [&](const std::string& name, const std::string& key, const std::string& value) {
      const Bytes b = rebuild(ext_model, {7, 5}, [&](const w::Field& f, Bytes& out, int) {
        if (f.number != 13) return false;
        const auto k = fields_at(f.bytes, {1});
        if (k.empty() || k[0].str() != key) return false;
        Bytes e;
        w::put_bytes_field(e, 1, key);
        w::put_bytes_field(e, 2, value);
        w::put_bytes_field(out, 13, std::span<const uint8_t>(e));
        return true;
      });
      const std::string d = add_case(name);
      spit(d + "/model.onnx", b);
      spit(d + "/model.onnx.data", ext_data);
    };
    rewrite_entry("stories_ext_offset_past_end", "offset", "400000");
    rewrite_entry("stories_ext_offset_not_a_number", "offset", "12abc");
    rewrite_entry("stories_ext_length_wrong", "length", "3");
    rewrite_entry("stories_ext_location_dotdot", "location", "../onnx_int4_extdata/model.onnx.data");
    rewrite_entry("stories_ext_location_absolute", "location", ext_dir + "/model.onnx.data");
  }
  return cases;
}

}  // namespace nbits::testing
