// nbits._nbits: the thin C++ layer of the Python package, over include/nbits/nbits.h only.
// The onnxruntime-genai-shaped classes are in nbits/__init__.py; this module gives them
// Model, TokenStream and Generator with numpy in and out and the GIL released while the
// model runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "nbits/error.h"
#include "nbits/nbits.h"

// One chat message as the Python wrapper hands it over (nbits/__init__.py, apply_chat_template):
// role, content, an assistant's reasoning, its calls (id, function name, arguments JSON), and a
// tool result's tool_call_id and function name.
using MessageRow =
    std::tuple<std::string, std::string, std::string,
               std::vector<std::tuple<std::string, std::string, std::string>>, std::string, std::string>;

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using IdArray = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using IntArray = nb::ndarray<nb::numpy, int32_t, nb::ndim<1>>;

// Text from the library is UTF-8 (invalid input was already replaced by U+FFFD); decode
// with "replace" anyway so a str always comes back.
nb::str to_str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw nb::python_error();
  return nb::steal<nb::str>(o);
}

// A numpy int32 array that owns a copy of `ids`.
IntArray to_numpy(std::vector<int32_t> ids) {
  auto* heap = new std::vector<int32_t>(std::move(ids));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<int32_t>*>(p); });
  return IntArray(heap->data(), {heap->size()}, owner);
}

std::span<const int32_t> as_span(const IdArray& a) { return {a.data(), static_cast<size_t>(a.shape(0))}; }

nbits::ModelOptions model_options(int threads, std::optional<int> accuracy_level, const std::string& scales,
                                  const std::string& kv_cache, int64_t context, bool profile) {
  nbits::ModelOptions o;
  if (threads < 0)
    throw nbits::Error("threads must be >= 0 (0 = all hardware threads), got " + std::to_string(threads));
  o.threads = threads;
  if (accuracy_level && *accuracy_level != 0 && *accuracy_level != 1 && *accuracy_level != 2 &&
      *accuracy_level != 3 && *accuracy_level != 4)
    throw nbits::Error("accuracy_level must be 0..4 (4 = int8 activations), got " +
                       std::to_string(*accuracy_level));
  o.accuracy_level = accuracy_level;
  if (scales == "fp32") {
    o.fp16_scales = false;
  } else if (scales == "fp16") {
    o.fp16_scales = true;
  } else {
    throw nbits::Error("scales must be 'fp32' or 'fp16', got '" + scales + "'");
  }
  if (kv_cache == "model") {
    o.kv_cache = nbits::ModelOptions::KvCache::kModel;
  } else if (kv_cache == "fp32" || kv_cache == "f32") {
    o.kv_cache = nbits::ModelOptions::KvCache::kF32;
  } else if (kv_cache == "fp16" || kv_cache == "f16") {
    o.kv_cache = nbits::ModelOptions::KvCache::kF16;
  } else if (kv_cache == "q8") {
    o.kv_cache = nbits::ModelOptions::KvCache::kQ8;
  } else {
    throw nbits::Error("kv_cache must be 'model', 'fp32', 'fp16' or 'q8', got '" + kv_cache + "'");
  }
  if (context < 0)
    throw nbits::Error("context must be >= 0 (0 = the model's), got " + std::to_string(context));
  o.context = context;
  o.profile = profile;
  return o;
}

// One nbits::Generator plus a guard: nbits allows one thread at a time per Generator, and with
// the GIL released two Python threads could otherwise enter the same one.
class PyGenerator {
 public:
  PyGenerator(std::shared_ptr<const nbits::Model> model, const nbits::GenerationOptions& options)
      : model_(std::move(model)), gen_(model_, options) {}

  class Busy {
   public:
    explicit Busy(PyGenerator& g) : g_(g) {
      if (g_.busy_.exchange(true))
        throw nbits::Error("this Generator is running in another thread (use one Generator per thread)");
    }
    ~Busy() { g_.busy_.store(false); }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    PyGenerator& g_;
  };

  nbits::Generator& gen() { return gen_; }

  // The library's logits span may move between runs (it points into the session's output),
  // so a numpy view of it could outlive its memory. Views are of a buffer of ours instead,
  // which lives as long as any view of it: memory-safe whatever the caller keeps.
  nb::ndarray<nb::numpy, const float, nb::ndim<3>> logits_view(std::span<const float> l) {
    if (!logits_ || logits_->size() != l.size()) logits_ = std::make_shared<std::vector<float>>(l.size());
    std::copy(l.begin(), l.end(), logits_->begin());
    auto* keep = new std::shared_ptr<std::vector<float>>(logits_);
    nb::capsule owner(keep,
                      [](void* p) noexcept { delete static_cast<std::shared_ptr<std::vector<float>>*>(p); });
    return nb::ndarray<nb::numpy, const float, nb::ndim<3>>(logits_->data(), {1, 1, l.size()}, owner);
  }
  const std::shared_ptr<const nbits::Model>& model() const { return model_; }

 private:
  std::shared_ptr<const nbits::Model> model_;
  nbits::Generator gen_;
  std::atomic<bool> busy_{false};
  std::shared_ptr<std::vector<float>> logits_;
};

// Runs `f` on the generator with the GIL released.
template <typename F>
auto run_unlocked(PyGenerator& g, F&& f) {
  PyGenerator::Busy busy(g);
  nb::gil_scoped_release release;
  return f(g.gen());
}

}  // namespace

NB_MODULE(_nbits, m) {
  m.doc() = "nbits C++ core (internal: use the classes of the nbits package).";

  nb::exception<nbits::Error>(m, "Error", PyExc_RuntimeError);

  nb::class_<nbits::Model>(m, "Model", "A loaded model (immutable; shared by any number of Generators).")
      .def("has_tokenizer", &nbits::Model::has_tokenizer)
      .def(
          "encode",
          [](const nbits::Model& self, std::string_view text, bool add_special) {
            std::vector<int32_t> ids;
            {
              nb::gil_scoped_release release;
              ids = self.encode(text, add_special);
            }
            return to_numpy(std::move(ids));
          },
          "text"_a, "add_special"_a = true, "Token ids of `text` as a numpy int32 array.")
      .def(
          "decode",
          [](const nbits::Model& self, IdArray ids, bool skip_special) {
            std::string text;
            {
              nb::gil_scoped_release release;
              text = self.decode(as_span(ids), skip_special);
            }
            return to_str(text);
          },
          "ids"_a, "skip_special"_a = true, "Text of token ids.")
      .def(
          "apply_chat_template",
          [](const nbits::Model& self, const std::vector<MessageRow>& messages, bool add_generation_prompt,
             const std::string& tools_json) {
            std::vector<nbits::ChatMessage> msgs;
            msgs.reserve(messages.size());
            for (const auto& [role, content, reasoning, calls, call_id, name] : messages) {
              nbits::ChatMessage m{role, content};
              m.reasoning = reasoning;
              for (const auto& [id, fn, args] : calls) m.tool_calls.push_back({id, fn, args});
              m.tool_call_id = call_id;
              m.name = name;
              msgs.push_back(std::move(m));
            }
            return to_str(self.apply_chat_template(msgs, add_generation_prompt, tools_json));
          },
          "messages"_a, "add_generation_prompt"_a = true, "tools_json"_a = "",
          "Renders [(role, content, reasoning, [(call id, name, arguments JSON)], tool_call_id, name), ...]\n"
          "with the model's chat template; tools_json: \"\" or a JSON array of OpenAI tools.")
      .def("context_length", &nbits::Model::context_length)
      .def("max_context_length", &nbits::Model::max_context_length)
      .def("vocab_size", &nbits::Model::vocab_size)
      .def("eos_token_ids", &nbits::Model::eos_token_ids)
      .def("is_eos", &nbits::Model::is_eos, "id"_a)
      .def("bos_token_id", &nbits::Model::bos_token_id)
      .def("pad_token_id", &nbits::Model::pad_token_id)
      .def("token_to_id", &nbits::Model::token_to_id, "token"_a)
      .def("model_type", &nbits::Model::model_type)
      .def("weight_bytes", &nbits::Model::weight_bytes);
  // "" when the guidance spec compiles for the model's vocabulary, else why not.
  m.def("check_guidance", [](const nbits::Model& model, const std::string& type, const std::string& data) {
    return model.check_guidance(type, data);
  });
  m.def("guidance_available", &nbits::guidance_available);

  m.def(
      "load_model",
      [](const std::string& path, int threads, std::optional<int> accuracy_level, const std::string& scales,
         const std::string& kv_cache, int64_t context, bool profile, const std::string& variant,
         const std::string& requantize_float) {
        nbits::ModelOptions o = model_options(threads, accuracy_level, scales, kv_cache, context, profile);
        o.variant = variant;
        if (requantize_float == "q8") {
          o.requantize_float = 8;
        } else if (requantize_float == "q4") {
          o.requantize_float = 4;
        } else if (requantize_float != "keep") {
          throw nbits::Error("requantize_float must be 'keep', 'q8' or 'q4', got '" + requantize_float + "'");
        }
        std::shared_ptr<nbits::Model> model;
        {
          nb::gil_scoped_release release;
          model = nbits::Model::load(path, o);
        }
        return model;
      },
      "path"_a, "threads"_a = 0, "accuracy_level"_a = nb::none(), "scales"_a = "fp32", "kv_cache"_a = "model",
      "context"_a = 0, "profile"_a = false, "variant"_a = "", "requantize_float"_a = "keep",
      "Loads a genai folder, a Hugging Face Optimum folder, a model .onnx inside either, or a .gguf file.");

  nb::class_<nbits::TokenStream>(m, "TokenStream", "Streaming detokenizer: ids in, complete UTF-8 text out.")
      .def(
          "__init__",
          [](nbits::TokenStream* self, std::shared_ptr<nbits::Model> model, bool skip_special) {
            new (self) nbits::TokenStream(std::move(model), skip_special);
          },
          "model"_a, "skip_special"_a = true)
      .def(
          "push", [](nbits::TokenStream& self, int32_t id) { return to_str(self.push(id)); }, "id"_a,
          "Adds one id; returns the text that became complete (maybe empty).")
      .def(
          "flush", [](nbits::TokenStream& self) { return to_str(self.flush()); },
          "Returns whatever text is left.");

  nb::class_<PyGenerator>(m, "Generator", "One conversation with its own KV cache on a shared Model.")
      .def(
          "__init__",
          [](PyGenerator* self, std::shared_ptr<nbits::Model> model, int64_t max_new_tokens,
             std::optional<int64_t> max_length, std::optional<bool> do_sample,
             std::optional<float> temperature, std::optional<int64_t> top_k, std::optional<float> top_p,
             float min_p, std::optional<float> repetition_penalty, uint64_t seed, bool add_special,
             int64_t context, std::string guidance_type, std::string guidance_data, std::string speculative,
             std::shared_ptr<nbits::Model> draft_model, int64_t draft_max, int64_t draft_min,
             int64_t lookup_ngram) {
            if (!model) throw nbits::Error("Generator: model is None");
            nbits::GenerationOptions o;
            o.max_new_tokens = max_new_tokens;
            o.max_length = max_length;
            o.do_sample = do_sample;
            o.temperature = temperature;
            o.top_k = top_k;
            o.top_p = top_p;
            o.min_p = min_p;
            o.repetition_penalty = repetition_penalty;
            o.seed = seed;
            o.add_special = add_special;
            o.context = context;
            o.guidance_type = std::move(guidance_type);
            o.guidance_data = std::move(guidance_data);
            o.speculative = std::move(speculative);
            o.draft_model = std::move(draft_model);
            o.draft_max = draft_max;
            o.draft_min = draft_min;
            o.lookup_ngram = lookup_ngram;
            new (self) PyGenerator(std::move(model), o);
          },
          "model"_a, "max_new_tokens"_a = 128, "max_length"_a = nb::none(), "do_sample"_a = nb::none(),
          "temperature"_a = nb::none(), "top_k"_a = nb::none(), "top_p"_a = nb::none(), "min_p"_a = 0.0f,
          "repetition_penalty"_a = nb::none(), "seed"_a = 0, "add_special"_a = true, "context"_a = 0,
          "guidance_type"_a = "", "guidance_data"_a = "", "speculative"_a = "",
          "draft_model"_a.none() = nb::none(), "draft_max"_a = 8, "draft_min"_a = 0, "lookup_ngram"_a = 4)
      .def(
          "append_tokens",
          [](PyGenerator& self, IdArray ids) {
            run_unlocked(self, [&](nbits::Generator& g) {
              g.append_tokens(as_span(ids));
              return 0;
            });
          },
          "ids"_a, "Runs `ids` on top of the cache (GIL released).")
      .def(
          "generate_next_token",
          [](PyGenerator& self) {
            return run_unlocked(self, [](nbits::Generator& g) {
              g.generate_next_token();
              return g.next_token();
            });
          },
          "Runs the last sampled token, samples the next one and returns it (GIL released).")
      .def("is_done", [](PyGenerator& self) { return self.gen().is_done(); })
      .def("next_token", [](PyGenerator& self) { return self.gen().next_token(); })
      .def(
          "logits",
          [](PyGenerator& self) {
            std::span<const float> l = self.gen().logits();
            if (l.empty())
              throw nbits::Error(
                  "no logits: call append_tokens() first (with speculative decoding, a step that verified a "
                  "draft keeps no single row)");
            return self.logits_view(l);
          },
          "The last position's logits as a read-only [1, 1, vocab] float32 view of this "
          "Generator's logits buffer (refreshed by each call: one memcpy, no allocation).")
      .def("sequence", [](PyGenerator& self) { return to_numpy(self.gen().sequence()); })
      .def(
          "rewind_to",
          [](PyGenerator& self, int64_t length) {
            PyGenerator::Busy busy(self);
            self.gen().rewind_to(length);
          },
          "length"_a)
      .def(
          "generate",
          [](PyGenerator& self, std::string_view text, nb::object on_text) {
            nbits::Generator::OnText cb;
            if (!on_text.is_none()) {
              cb = [&on_text](std::string_view piece) {
                nb::gil_scoped_acquire acquire;
                on_text(to_str(piece));
              };
            }
            nbits::GenerationResult r =
                run_unlocked(self, [&](nbits::Generator& g) { return g.generate(text, cb); });
            nb::dict out;
            out["prompt_ids"] = to_numpy(std::move(r.prompt_ids));
            out["ids"] = to_numpy(std::move(r.ids));
            out["text"] = to_str(r.text);
            out["stopped_at_eos"] = r.stopped_at_eos;
            out["prefill_tok_s"] = r.prefill_tok_s;
            out["decode_ms_per_token"] = r.decode_ms_per_token;
            return out;
          },
          "text"_a, "on_text"_a = nb::none(),
          "Prefills `text` and generates up to max_new_tokens (GIL released; on_text(piece) is "
          "called with the GIL held). Returns a dict.")
      .def("reset",
           [](PyGenerator& self) {
             PyGenerator::Busy busy(self);
             self.gen().reset();
           })
      .def("length", [](PyGenerator& self) { return self.gen().length(); })
      .def(
          "speculation_stats",
          [](PyGenerator& self) {
            const nbits::SpeculationStats s = self.gen().speculation_stats();
            nb::dict out;
            out["steps"] = s.steps;
            out["verify_steps"] = s.verify_steps;
            out["drafted"] = s.drafted;
            out["accepted"] = s.accepted;
            out["draft_length"] = s.draft_length;
            return out;
          },
          "Speculative decoding's counts (steps, verify_steps, drafted, accepted, draft_length).")
      .def("capacity", [](PyGenerator& self) { return self.gen().capacity(); })
      .def("kv_cache_bytes", [](PyGenerator& self) { return self.gen().kv_cache_bytes(); })
      .def("model", [](PyGenerator& self) { return std::const_pointer_cast<nbits::Model>(self.model()); });
}
