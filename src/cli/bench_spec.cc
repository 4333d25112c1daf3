#include "cli/bench_spec.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "api/model_loader.h"
#include "base/error.h"
#include "llm/generator.h"
#include "llm/sampler.h"
#include "modelgen/bench_run.h"
#include "speculative/draft_model.h"
#include "speculative/prompt_lookup.h"
#include "speculative/speculative_decode.h"
#include "tokenizer/chat.h"

namespace nbits::cli {

const char* default_spec_bench_prompt() {
  return "Rename the variable `total` to `running_sum` in this function and return the whole function:\n\n"
         "def summarize(values, weights=None):\n"
         "    total = 0.0\n"
         "    count = 0\n"
         "    for i, value in enumerate(values):\n"
         "        weight = 1.0 if weights is None else weights[i]\n"
         "        if value is None:\n"
         "            continue\n"
         "        total += value * weight\n"
         "        count += 1\n"
         "    if count == 0:\n"
         "        return None\n"
         "    mean = total / count\n"
         "    return {\"total\": total, \"count\": count, \"mean\": mean}\n";
}

namespace {

struct Round {
  double plain_ms = 0, spec_ms = 0;  // decode ms/token
  bool same_ids = false;
  speculative::SpeculativeStats stats;
  int64_t tokens = 0;
};

}  // namespace

int run_spec_bench(const SpecBenchOptions& o) {
  NBITS_CHECK(o.spec == "lookup" || o.spec == "draft", "bench --spec: lookup or draft (got '", o.spec, "')");
  NBITS_CHECK(o.spec != "draft" || !o.draft_model.empty(), "bench --spec draft needs --draft-model FILE");
  NBITS_CHECK(o.decode >= 1 && o.reps >= 1, "bench --spec: -n and --reps must be >= 1");
  nlohmann::ordered_json out = {{"model", o.model},
                                {"spec", o.spec},
                                {"decode_tokens", o.decode},
                                {"reps", o.reps},
                                {"runs", nlohmann::ordered_json::array()}};
  if (!o.draft_model.empty()) out["draft_model"] = o.draft_model;
  bool all_same = true;
  for (int t : o.threads) {
    graph::SessionOptions so = o.session;
    so.threads = t;
    api::LoadedModel m = api::load_model(o.model, so, /*need_tokenizer=*/true);
    const Tokenizer& tok = *m.tokenizer;
    const std::vector<int32_t> prompt =
        tok.chat_template().empty()
            ? tok.encode(o.prompt, /*add_special=*/true)
            : tok.encode(render_chat(tok, {{"user", o.prompt}}, /*add_generation_prompt=*/true), false);
    const int64_t ctx = static_cast<int64_t>(prompt.size()) + o.decode + o.draft_max + 8;
    llm::Generator g(m.config, std::move(m.session), ctx);
    std::unique_ptr<speculative::Drafter> drafter;
    if (o.spec == "lookup") {
      drafter = std::make_unique<speculative::PromptLookup>();
    } else {
      api::LoadedModel d = api::load_model(o.draft_model, so, /*need_tokenizer=*/true);
      speculative::check_same_vocabulary(tok, *d.tokenizer);
      drafter = std::make_unique<speculative::DraftModel>(
          std::make_unique<llm::Generator>(d.config, std::move(d.session), g.capacity()));
    }
    std::vector<Round> rounds;
    for (int r = 0; r < o.reps; ++r) {
      Round rd;
      g.reset();
      llm::Sampler plain_sampler;  // greedy
      const llm::GenerateResult want = g.generate(prompt, o.decode, plain_sampler);
      rd.plain_ms = g.stats().decode_ms_per_token();
      g.reset();
      llm::Sampler spec_sampler;
      speculative::SpeculativeDecoder dec(*drafter, o.draft_max);
      const llm::GenerateResult got = dec.generate(g, prompt, o.decode, spec_sampler);
      rd.spec_ms = g.stats().decode_ms_per_token();
      rd.same_ids = got.ids == want.ids;
      rd.stats = dec.stats();
      rd.tokens = static_cast<int64_t>(got.ids.size());
      all_same = all_same && rd.same_ids;
      rounds.push_back(rd);
    }
    std::vector<double> plain, spec;
    int64_t drafted = 0, accepted = 0, steps = 0, tokens = 0;
    bool same = true;
    for (const Round& rd : rounds) {
      plain.push_back(rd.plain_ms);
      spec.push_back(rd.spec_ms);
      drafted += rd.stats.drafted;
      accepted += rd.stats.accepted;
      steps += rd.stats.steps;
      tokens += rd.tokens;
      same = same && rd.same_ids;
    }
    const double p = modelgen::percentile(plain, 0.5), s = modelgen::percentile(spec, 0.5);
    // Tokens per model step after the first token (which the prompt's step draws).
    const double per_step =
        steps > 0 ? static_cast<double>(tokens - o.reps) / static_cast<double>(steps) : 1.0;
    const double acceptance =
        drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0;
    out["runs"].push_back({{"threads", t},
                           {"prompt_tokens", prompt.size()},
                           {"plain_decode_ms_median", p},
                           {"spec_decode_ms_median", s},
                           {"speedup", s > 0 ? p / s : 0.0},
                           {"spec_tok_s", s > 0 ? 1e3 / s : 0.0},
                           {"plain_tok_s", p > 0 ? 1e3 / p : 0.0},
                           {"drafted", drafted},
                           {"accepted", accepted},
                           {"acceptance", acceptance},
                           {"tokens_per_step", per_step},
                           {"plain_decode_ms", plain},
                           {"spec_decode_ms", spec},
                           {"same_ids", same}});
    if (!o.json)
      std::printf(
          "threads %d: plain %.2f ms/token | %s %.2f ms/token = %.1f tok/s, %.2fx | accepted %lld of %lld "
          "drafted (%.0f%%), %.2f tokens per model step | ids %s\n",
          t, p, o.spec.c_str(), s, s > 0 ? 1e3 / s : 0.0, s > 0 ? p / s : 0.0,
          static_cast<long long>(accepted), static_cast<long long>(drafted), 100.0 * acceptance, per_step,
          same ? "equal plain decoding's" : "DIFFER from plain decoding's");
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
  return all_same ? 0 : 1;
}

}  // namespace nbits::cli
