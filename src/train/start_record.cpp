// The `start` record of metrics.jsonl and the lines a session logs before its first step (session.h).
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "session.h"
#include "trafo/run_config/config_keys.h"
#include "training_data.h"

namespace trafo::train {
namespace {

// The corpora (pairs, weight, share of the pairs served, tag, token cache) and the leak check, in the
// `start` record and the log.
void describe_data(const Session& s, nlohmann::json& start) {
  const auto& paths = s.files.paths;
  const double temperature = s.config.data.sampling_temperature;
  // sums that cannot overflow
  const auto weights = data::scaled_weights(draw_weights(paths, s.data.corpora, temperature));
  double total_weight = 0.0;
  for (const double weight : weights) total_weight += weight;
  nlohmann::json corpora = nlohmann::json::array();
  for (size_t i = 0; i < s.data.corpora.size(); ++i) {
    const auto& spec = paths.train[i];
    const auto& cached = s.data.corpora[i];
    const double share = weights[i] / total_weight;
    corpora.push_back({{"src", spec.src}, {"tgt", spec.tgt}, {"pairs", cached.corpus.size()}, {"weight", spec.weight},
                       {"share", share}, {"tag", spec.tag}, {"src_lang", source_language(spec, s.config.data)},
                       {"tgt_lang", target_language(spec, s.config.data)},
                       {"token_cache", cached.file.string()},
                       {"token_cache_built", cached.built}});
    // pairs added by --all-caps-every and --title-case-every
    const int64_t variants = cached.corpus.size() - cached.corpus.counts().kept();
    if (variants > 0) corpora.back()["case_variants"] = variants;
    spdlog::info(
        "corpus {}: {} / {}: {} pairs{}, weight {}{} ({:.1f}% of the pairs served){}; token cache {} ({} in {:.1f} s)",
        i + 1, spec.src, spec.tgt, cached.corpus.size(),
        variants > 0 ? fmt::format(" ({} of them case variants)", variants) : "", spec.weight,
        temperature > 0 ? fmt::format(" x pairs^(1/{})", temperature) : "", 100.0 * share,
        spec.tag.empty() ? "" : ", tag " + spec.tag, cached.file.string(), cached.built ? "built" : "mapped",
        cached.seconds);
  }
  if (!s.data.samples.empty()) {
    // What subword regularisation costs: its token caches, their size and the time to build them.
    double seconds = 0.0, megabytes = 0.0;
    bool built = false;
    for (size_t sample = 0; sample < s.data.samples.size(); ++sample) {
      for (size_t i = 0; i < s.data.samples[sample].size(); ++i) {
        const auto& cached = s.data.samples[sample][i];
        corpora[i]["sampled_token_caches"].push_back(cached.file.string());
        seconds += cached.seconds;
        built |= cached.built;
        std::error_code error;
        const auto bytes = std::filesystem::file_size(cached.file, error);
        if (!error) megabytes += static_cast<double>(bytes) / 1e6;
      }
    }
    start["subword_samples"] = s.data.samples.size();
    start["subword_alpha"] = s.config.data.subword_alpha;
    spdlog::info("subword regularisation: {} sampled segmentations of every pair (alpha {}), one per epoch in turn; "
                 "their token caches: {:.1f} MB, {} in {:.1f} s",
                 s.data.samples.size(), s.config.data.subword_alpha, megabytes, built ? "built" : "mapped", seconds);
  }
  start["corpora"] = corpora;
  start["cache_dir"] = s.files.cache.string();
  if (!s.main_rank()) return;
  start["dev_pairs_in_training"] = s.leaks.dev.in_training.size();
  if (s.leaks.test) start["test_pairs_in_training"] = s.leaks.test->in_training.size();
}

}  // namespace

nlohmann::json start_record(Session& s) {
  auto& replicas = s.place.replicas;
  nlohmann::json start = {{"config", s.settled.text}, {"version", TRAFO_VERSION}, {"torch", TORCH_VERSION},
                          {"threads", s.place.threads}, {"device", s.place.device.str()},
                          {"world_size", replicas.size()}, {"resumed", s.resumed()},
                          {"train_pairs", s.data.train_pairs()}, {"vocab_size", s.data.tokenizer.vocab_size()},
                          {"parameters", s.model->parameter_count()}};
  if (replicas.size() > 1) {
    start["gradient_bytes"] = replicas.gradient_bytes();
    start["gradient_allreduce_s"] = replicas.time_gradient_all_reduce();
    spdlog::info("one all-reduce of the gradients ({:.1f} MB): {:.3f} s", replicas.gradient_bytes() / 1e6,
                 start["gradient_allreduce_s"].get<double>());
  }
  if (s.training.average) start["ema"] = s.config.optim.ema;
  start["preset"] = s.settled.preset.name;
  start["preset_reason"] = s.settled.preset.why;
  start["preset_set"] = s.settled.preset.set;
  start["batch_tokens"] = s.budget.tokens;  // fitted by --batch-tokens auto, or as given
  nlohmann::json choices = nlohmann::json::array();
  for (const auto& choice : s.choices()) {
    choices.push_back({{"what", choice.what}, {"value", choice.value}, {"why", choice.why}});
  }
  start["choices"] = choices;
  start["precision"] = s.place.precision.name();
  start["precision_reason"] = s.place.precision.reason;
  start["validation_precision"] = s.validation.decoding_precision.name();
  start["validation_precision_reason"] = s.validation.decoding_precision.reason;
  describe_data(s, start);
  if (!s.config.init_from.empty()) start["init_from"] = s.config.init_from;
  return start;
}

void log_start(const Session& s) {
  const auto& c = s.config;
  if (s.fine_tuned()) {
    spdlog::info("fine-tuning from {}: its weights, tokenizer and model, a fresh optimizer from step 0", c.init_from);
  }
  spdlog::info("{} {} at step {}: {} training pairs, {} batches per epoch, {} parameters, {} threads on {}, {}{}",
               s.resumed() ? "resuming" : "starting", s.folder.path().string(), s.training.progress.step,
               s.data.train_pairs(), s.batcher.batches_per_epoch(), s.model->parameter_count(), s.place.threads,
               s.place.device.str(), s.place.replicas.describe(),
               s.training.average
                   ? fmt::format(", validating and saving a moving average of the weights (--ema {})", c.optim.ema)
                   : "");
  if (s.place.load && s.place.busy_at_start >= 0.5) {
    spdlog::info("other processes keep about {:.1f} of {} cores busy: training on {} threads, following the load "
                 "(--threads N fixes the number)",
                 s.place.busy_at_start, util::resolve_threads(0), s.place.threads);
  }
  // Each automatic choice, the option and the value it took, and why: "which learning rate does this
  // run use, and why?" is one line here.
  for (const auto& choice : s.choices()) spdlog::info("choice: {} {} ({})", choice.what, choice.value, choice.why);
}

}  // namespace trafo::train
