#include "gguf/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nbits::gguf {
namespace {

std::string key(const Hyperparams& hp, const char* k) { return hp.arch + "." + k; }

// ggml_rope_yarn_corr_dim: the rotary pair whose wavelength fits n_rot turns in the original context.
double corr_dim(int64_t n_dims, int64_t n_ctx_orig, double n_rot, double base) {
  return static_cast<double>(n_dims) *
         std::log(static_cast<double>(n_ctx_orig) / (n_rot * 2 * std::numbers::pi)) / (2 * std::log(base));
}

double get_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

void read_yarn(const File& f, Hyperparams& hp, bool yarn) {
  hp.yarn = yarn;
  if (!yarn) return;
  const double factor = hp.rope_linear_factor;
  hp.yarn_ext_factor = f.get_float(key(hp, "rope.scaling.yarn_ext_factor")).value_or(-1.0);
  if (hp.yarn_ext_factor < 0) hp.yarn_ext_factor = 1.0;  // llama.cpp: negative is "not set"
  hp.yarn_beta_fast = f.get_float(key(hp, "rope.scaling.yarn_beta_fast")).value_or(32.0);
  hp.yarn_beta_slow = f.get_float(key(hp, "rope.scaling.yarn_beta_slow")).value_or(1.0);
  if (!std::isfinite(hp.yarn_ext_factor) || !(hp.yarn_beta_fast > 0) || !(hp.yarn_beta_slow > 0) ||
      !std::isfinite(hp.yarn_beta_fast) || !std::isfinite(hp.yarn_beta_slow))
    f.fail(key(hp, "rope.scaling.yarn_ext_factor / yarn_beta_fast / yarn_beta_slow") +
           " must be finite, the betas positive");
  // llama.cpp's context: with ext_factor != 0 the magnitude is get_mscale (a log multiplier, read by
  // the architectures that define one, divides it), cancelled once and applied again by ggml's
  // rope_yarn: a net get_mscale. Without, yarn_attn_factor (default 1).
  double m = f.get_float(key(hp, "rope.scaling.yarn_attn_factor")).value_or(1.0);
  if (hp.yarn_ext_factor != 0) {
    const double log_mul =
        hp.arch == "mistral3" ? f.get_float(key(hp, "rope.scaling.yarn_log_multiplier")).value_or(0.0) : 0.0;
    m = log_mul != 0 ? get_mscale(factor, 1.0) / get_mscale(factor, log_mul) : get_mscale(factor, 1.0);
  }
  hp.yarn_mscale = m * hp.rope_attn_factor;
  if (!(hp.yarn_mscale > 0) || !std::isfinite(hp.yarn_mscale)) f.fail("YaRN magnitude must be positive");
}

void read_attn_temperature(const File& f, Hyperparams& hp) {
  hp.attn_temp_scale = f.get_float(key(hp, "attention.temperature_scale")).value_or(0.0);
  if (!std::isfinite(hp.attn_temp_scale)) f.fail(key(hp, "attention.temperature_scale") + " must be finite");
  if (hp.attn_temp_scale == 0) return;
  hp.attn_temp_offset = 0.0;
  hp.attn_temp_floor = hp.rope_orig_context;
  if (hp.attn_temp_floor <= 0)
    f.fail(key(hp, "rope.scaling.original_context_length") +
           " must be positive for attention temperature scaling");
}

void read_mrope_text(const File& f, Hyperparams& hp) {
  const std::string k = key(hp, "rope.dimension_sections");
  std::vector<int64_t> sec = f.get_ints(k);
  if (sec.size() < 3 || sec.size() > 4) f.fail(k + " must hold 3 or 4 section sizes");
  sec.resize(4, 0);
  int64_t sum = 0;
  for (const int64_t v : sec) {
    if (v < 0 || v > hp.rope_dim) f.fail(k + ": section sizes must be in [0, rope dimension count]");
    sum += v;
  }
  if (sum <= 0) f.fail(k + ": the sections are empty");
  const bool interleaved = hp.arch == "qwen3vl";
  hp.rope_frozen_pairs.assign(static_cast<size_t>(hp.rope_dim / 2), false);
  for (int64_t i = 0; i < hp.rope_dim / 2; ++i) {
    const int64_t s = i % sum;  // ggml_mrope_cache_init's sector
    bool extra;
    if (interleaved)
      extra = !((s % 3 == 0 && s < 3 * sec[0]) || (s % 3 == 1 && s < 3 * sec[1]) ||
                (s % 3 == 2 && s < 3 * sec[2]));
    else
      extra = s >= sec[0] + sec[1] + sec[2];
    hp.rope_frozen_pairs[static_cast<size_t>(i)] = extra;
  }
}

RopeTables rope_tables(const Hyperparams& hp, int64_t T, double base, bool scaled,
                       const std::vector<float>& factors) {
  const int64_t half = hp.rope_dim / 2;
  const bool yarn = scaled && hp.yarn;
  const double freq_scale = scaled ? 1.0 / hp.rope_linear_factor : 1.0;
  const double ext = yarn ? hp.yarn_ext_factor : 0.0;
  double lo = 0, hi = 0;
  if (yarn) {  // ggml_rope_yarn_corr_dims
    lo = std::max(0.0, std::floor(corr_dim(hp.rope_dim, hp.rope_orig_context, hp.yarn_beta_fast, base)));
    hi = std::min(static_cast<double>(hp.rope_dim - 1),
                  std::ceil(corr_dim(hp.rope_dim, hp.rope_orig_context, hp.yarn_beta_slow, base)));
  }
  // ggml's rope_yarn applies 1 + 0.1 ln(1 / freq_scale) itself where ext != 0; hp.yarn_mscale is the net.
  const double mscale = yarn ? hp.yarn_mscale : hp.rope_attn_factor;
  RopeTables r;
  r.cos.resize(static_cast<size_t>(T * half));
  r.sin.resize(r.cos.size());
  for (int64_t i = 0; i < half; ++i) {
    const double ff = factors.empty() ? 1.0 : static_cast<double>(factors[static_cast<size_t>(i)]);
    const bool frozen = !hp.rope_frozen_pairs.empty() && hp.rope_frozen_pairs[static_cast<size_t>(i)];
    const double inv =
        frozen ? 0.0 : std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(hp.rope_dim)) / ff;
    // rope_yarn_ramp: 1 below the fast correction dim, 0 above the slow one.
    const double y = (static_cast<double>(i) - lo) / std::max(0.001, hi - lo);
    const double mix = ext != 0 ? (1.0 - std::min(1.0, std::max(0.0, y))) * ext : 0.0;
    for (int64_t p = 0; p < T; ++p) {
      const double extrap = static_cast<double>(p) * inv, interp = freq_scale * extrap;
      const double th = interp * (1 - mix) + extrap * mix;
      r.cos[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(th) * mscale);
      r.sin[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(th) * mscale);
    }
  }
  return r;
}

std::vector<float> attn_temperature(const Hyperparams& hp, int64_t T) {
  std::vector<float> t(static_cast<size_t>(T), 1.0f);
  if (hp.attn_temp_scale == 0) return t;
  for (int64_t p = 0; p < T; ++p)
    t[static_cast<size_t>(p)] =
        static_cast<float>(std::log(std::floor((static_cast<double>(p) + hp.attn_temp_offset) /
                                               static_cast<double>(hp.attn_temp_floor)) +
                                    1.0) *
                               hp.attn_temp_scale +
                           1.0);
  return t;
}

}  // namespace nbits::gguf
