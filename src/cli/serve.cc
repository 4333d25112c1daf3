// `nbits serve`: an OpenAI-compatible HTTP server (src/serve), where the build has Boost.Beast.
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/command.h"
#include "cli/common.h"
#include "cli/guidance_flags.h"
#if NBITS_HAVE_SERVE
#include "serve/serve.h"
#endif

namespace nbits::cli {
namespace {

int serve_main(const std::vector<std::string>& args) {
  Flags f("serve", "-m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [options]",
          "Serves the OpenAI API over HTTP: POST /v1/chat/completions, /v1/completions (stream or not),\n"
          "GET /v1/models, /health, /metrics, POST /tokenize, /detokenize. --parallel sessions each own a\n"
          "KV cache of the full --ctx and keep their conversation: a request reuses the slot sharing the\n"
          "longest token prefix with its prompt. Requests beyond the sessions wait (at most --queue); more\n"
          "get 503. A prompt is prefilled --prefill-chunk tokens at a time: other sessions' streams get\n"
          "their next token between chunks, and a client that leaves stops its prompt at the next chunk.\n"
          "SIGINT/SIGTERM: stop listening, end waiting and prefilling requests, finish the replies being\n"
          "generated, exit 0 (a second signal stops those replies too).");
  f.str("-m,--model", "DIR", "model folder (genai_config.json, model.onnx, tokenizer.json) or a .gguf file",
        true);
  f.str("--host", "ADDR", "address to listen on", false, "127.0.0.1");
  f.i64("--port", "N", "TCP port (0: any free port, printed at start)", 8080, 0, 65535);
  f.i64("--parallel", "N", "session slots (each its own KV cache of --ctx tokens)", 1, 1, 256);
  f.i64("--ctx", "N", "KV cache length of each session (default: the model's context)", std::nullopt, 1);
  f.i64("-t,--threads", "N", "worker threads shared by all sessions (0 = all hardware threads)", 0, 0, 1024);
  f.i64("--queue", "N", "requests that may wait for a free session", 16, 0, 100000);
  f.i64("--prefill-chunk", "N", "prompt tokens per prefill step (other sessions decode between steps)", 128,
        1, 1 << 20);
  f.i64("--connections", "N", "open connections served at once, more get 503 (0 = parallel + queue + 4)", 0,
        0, 100000);
  f.str("--cors", "ORIGIN",
        "allow browser pages from ORIGIN (e.g. http://localhost:3000, or *): CORS headers and OPTIONS "
        "preflight (default: off)");
  f.choice("--decode-batch", {"on", "off"},
           "run concurrent sessions' decode steps as one batched step (one pass over the weights)", "on");
  f.str("--api-key", "KEY", "require \"Authorization: Bearer KEY\" on every route but /health");
  f.str("--model-id", "NAME", "the model name /v1/models reports (default: the folder's name)");
  f.flag("--no-webui", "do not serve the chat page at / (the API routes stay)");
  f.flag("--strict-model-name",
         "answer 404 to a request naming another model (default: any name is served by the loaded model, "
         "and the reply names it)");
  f.i64("--max-body", "BYTES", "largest request body accepted (larger: 413)", 8 << 20, 1024);
  f.choice("--scales", {"fp32", "fp16"}, "MatMulNBits scale storage (see nbits run --help)", "fp32");
  f.choice("--kv-cache", {"model", "f32", "f16", "q8"}, "KV cache dtype (see nbits run --help)", "model");
  f.choice("--requantize-float", {"keep", "q8", "q4"},
           "float MatMul weights re-quantized at load (see nbits run --help)", "keep");
  f.str("--variant", "V", "which onnx/model_V.onnx of an Optimum folder (see nbits run --help)");
  add_guidance_limit_flags(f);
  f.choice(
      "--spec", {"off", "lookup", "draft"},
      "speculative decoding for requests that do not choose (a request's \"speculative\" field\n"
      "                             does): lookup = n-gram drafts from the prompt and the reply, draft =\n"
      "                             a smaller model of the same tokenizer (--draft-model). Replies are\n"
      "                             plain decoding's, token for token; batched sessions decode plainly",
      "off");
  f.str("--draft-model", "FILE",
        "the draft model (a .gguf file or a model folder); alone it implies --spec draft");
  f.i64("--draft-max", "N", "the longest draft; the length adapts below it to what pays", 8, 1, 32);
  if (auto rc = f.parse(args)) return *rc;
#if NBITS_HAVE_SERVE
  serve::ServeOptions o;
  o.model = f.get_str("--model");
  o.host = f.get_str("--host");
  o.port = static_cast<int>(f.get_i64("--port"));
  o.parallel = static_cast<int>(f.get_i64("--parallel"));
  if (f.has("--ctx")) o.ctx = f.get_i64("--ctx");
  o.threads = static_cast<int>(f.get_i64("--threads"));
  o.queue = static_cast<int>(f.get_i64("--queue"));
  if (f.has("--api-key")) o.api_key = f.get_str("--api-key");
  if (f.has("--model-id")) o.model_id = f.get_str("--model-id");
  o.strict_model_name = f.has("--strict-model-name");
  o.webui = !f.has("--no-webui");
  o.max_body_bytes = static_cast<size_t>(f.get_i64("--max-body"));
  o.fp16_scales = f.get_str("--scales") == "fp16";
  o.kv_cache = f.get_str("--kv-cache");
  o.requantize_float = f.get_str("--requantize-float") == "q8"   ? 8
                       : f.get_str("--requantize-float") == "q4" ? 4
                                                                 : 0;
  o.variant = f.get_str("--variant");
  o.guidance_mask_ms = guidance_limits(f).mask_ms;
  o.guidance_grammar_size = guidance_limits(f).grammar_size;
  o.prefill_chunk = f.get_i64("--prefill-chunk");
  o.decode_batch = f.get_str("--decode-batch") == "on";
  o.speculative = f.get_str("--spec");
  if (f.has("--draft-model")) {
    o.draft_model = f.get_str("--draft-model");
    if (!f.given("--spec")) o.speculative = "draft";
  } else if (o.speculative == "draft") {
    throw Error("--spec draft needs --draft-model FILE");
  }
  o.draft_max = f.get_i64("--draft-max");
  o.connections = static_cast<int>(f.get_i64("--connections"));
  if (f.has("--cors")) {
    o.cors = f.get_str("--cors");
    if (o.cors.empty() || o.cors.find_first_of("\r\n\t ,") != std::string::npos)
      throw Error("--cors: one origin (scheme://host[:port]) or *, got '" + o.cors + "'");
  }
  return serve::run_server(o);
#else
  throw Error(
      "this nbits was built without the HTTP server (Boost.Beast not found: apt-get install libboost-dev)");
#endif
}

}  // namespace

NBITS_COMMAND("serve", "OpenAI-compatible HTTP server with concurrent sessions", serve_main);

}  // namespace nbits::cli
