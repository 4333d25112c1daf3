// `nbits serve`: an OpenAI-compatible HTTP server over the public API (include/nbits).
// Built only where Boost's headers (Beast, Asio) are found (NBITS_HAVE_SERVE); the core library
// never uses them.
#pragma once

#include <cstdint>
#include <string>

namespace nbits::serve {

struct ServeOptions {
  std::string model;  // genai folder, model.onnx inside one, or a .gguf file
  std::string host = "127.0.0.1";
  int port = 8080;       // 0: any free port (the URL printed at start names it)
  int parallel = 1;      // session slots: each its own Generator and KV cache of `ctx` tokens
  int64_t ctx = 0;       // KV cache per slot; 0 = the model's default context
  int threads = 0;       // model worker threads (shared by all slots); 0 = all hardware threads
  int queue = 16;        // requests that may wait for a slot; more get 503
  std::string api_key;   // non-empty: every route but /health needs "Authorization: Bearer KEY"
  std::string model_id;  // the name /v1/models reports; empty = the model path's last component
  // A request naming another model: false (default) serves it with the one model loaded (the
  // reply names the real one), as clients configured for another server expect; true answers 404.
  bool strict_model_name = false;
  size_t max_body_bytes = 8u << 20;
  bool fp16_scales = false;
  std::string kv_cache = "model";  // model | f32 | f16 | q8
  double guidance_mask_ms = 0;     // ModelOptions' guidance budgets (0: the engine's default)
  int64_t guidance_grammar_size = 0;
  int requantize_float = 0;     // 0 | 8 | 4 (--requantize-float keep|q8|q4)
  std::string variant;          // an Optimum folder's decoder (--variant)
  int64_t prefill_chunk = 128;  // prompt tokens per step; other sessions decode between chunks
  std::string cors;             // "" = no CORS headers; else Access-Control-Allow-Origin's value
  int connections = 0;          // open connections served at once; 0 = parallel + queue + 4
  bool decode_batch = true;     // concurrent sessions' decode steps as one batched step
  bool webui = true;            // GET / serves the chat page (serve/webui.h); --no-webui: 404
  // Speculative decoding (GenerationOptions::speculative) for requests that do not choose:
  // "off" | "lookup" | "draft" (draft_model). A request's "speculative" field overrides it;
  // "draft" needs draft_model. With a response_format or a required tool call the drafts follow
  // the tokens the schema forces.
  std::string speculative = "off";
  std::string draft_model;  // a smaller model of the same tokenizer (loaded with the model's options)
  int64_t draft_max = 8;
};

// Binds, prints the URL, loads the model (/health answers 503 meanwhile), serves until
// SIGINT/SIGTERM: then stops listening, ends the requests waiting for a session and those
// still prefilling (at the next chunk), lets the replies being generated finish, and returns 0.
// A second signal stops those too, at their next token.
int run_server(const ServeOptions& options);

}  // namespace nbits::serve
