#include "session.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "trafo/metrics/language_id.h"
#include "trafo/run_config/config_file.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/test_hooks.h"
#include "trafo/train/trainer.h"

namespace trafo::train {
using run_config::TrainConfig;
namespace {

// Rank 0 speaks for the job and owns the folder's lock.
RunFolder open_folder(const TrainConfig& c, const Replicas& replicas) {
  if (!replicas.is_main()) spdlog::set_level(spdlog::level::warn);
  return RunFolder(c.run.run_dir, /*lock=*/replicas.is_main());
}

data::BatcherOptions batcher_options(const TrainConfig& c, const Replicas& replicas) {
  data::BatcherOptions options;
  options.batch_tokens = c.optim.batch_tokens;
  options.seed = c.machine.seed;
  options.shard = replicas.rank();
  options.shards = replicas.size();
  return options;
}

// The pairs too long for any batch, noted by every rank; rank 0's leak check (train.log holds both).
LeakReport report_data(const TrainConfig& c, const data::Batcher& batcher, const TrainingFiles& files,
                       const TrainingData& data, bool main_rank) {
  if (batcher.skipped_too_long() > 0) {
    spdlog::warn("{} training pairs are longer than --batch-tokens {} alone and are skipped",
                 batcher.skipped_too_long(), c.optim.batch_tokens);
  }
  if (!main_rank) return LeakReport{};
  return find_leaks(files.paths, data.tokenizer, data.corpora);
}

}  // namespace

SettledConfig settle_config(TrainConfig given, const run_config::DefaultsSpeed& speed) {
  SettledConfig settled;
  RunFolder::check_files_in(given.run.run_dir);  // before the options read its config.toml or time anything
  settled.options = settle_options(std::move(given));
  run_config::tag_targets(settled.options);
  settled.options.model.alignment_layer = run_config::guided_layer(settled.options);
  validate(settled.options);  // before the preset reads the data: an absurd option is named first
  settled.preset = settle_preset(settled.options, speed);
  settled.text = run_config::to_toml(settled.options);
  settled.max_time_s = run_config::parse_duration(settled.options.stop.max_time);
  return settled;
}

bool finalize(TrainConfig& config, const data::Tokenizer& tokenizer, int64_t batch_tokens) {
  config.model.vocab_size = tokenizer.vocab_size();
  config.optim.batch_tokens = batch_tokens;
  return true;
}

FittedBudget choose_batch_tokens(const SettledConfig& settled, const Placement& place, const TrainingData& data) {
  const auto& c = settled.options;
  const bool fitted = test_hooks().fit_tokens >= 0 || place.device.is_cuda();
  const auto& preset = settled.preset.set;
  const bool set_by_preset = std::find(preset.begin(), preset.end(), "batch-tokens") != preset.end();
  const int64_t tokens = c.optim.batch_tokens;
  if (tokens != kAutoBatchTokens && (!fitted || run_config::was_given(c, "batch-tokens") || set_by_preset)) {
    return {tokens, fitted ? fmt::format("--batch-tokens {} ({})", tokens, set_by_preset ? "the preset's" : "given")
                           : ""};
  }
  if (!fitted) return {kDefaultBatchTokens, fmt::format("--batch-tokens auto: {} on a CPU", kDefaultBatchTokens)};
  if (place.replicas.size() > 1) {
    return {kDefaultBatchTokens, fmt::format("--batch-tokens {}: a fit to the GPU's memory needs one process",
                                             kDefaultBatchTokens)};
  }
  auto model = c.model;
  model.vocab_size = data.tokenizer.vocab_size();
  return fit_batch_tokens(c.optim, model, place.device, place.precision.bf16,
                          corpus_extent(data.corpora, c.model.max_positions));
}

void check_before_launch(const TrainConfig& given) {
  const auto settled = settle_config(given);
  const auto& c = settled.options;
  check_data(run_config::data_files(c), cache_folder(c));
  check_resume_request(c);
}

namespace {

// A run starting again after the second look: the preset named, the look's reason for it.
SettledConfig settle_again(const TrainConfig& given, const std::string& why) {
  auto settled = settle_config(given);
  settled.preset.why = why;
  return settled;
}

}  // namespace

Session::Session(const TrainConfig& given, const Again* again)
    : environment(dist::read_environment()),
      settled(again != nullptr ? settle_again(given, again->why)
                               : settle_config(given, [this](const TrainConfig& c) {
                                   return defaults_tokens_per_s(c, environment);
                                 })),
      started(again != nullptr ? again->started : Clock::now()),
      files(settled.options),
      place(settled.options, environment),
      folder(open_folder(settled.options, place.replicas)),
      resume(choose_resume(settled.options, folder, place.replicas)),
      data(settled.options, files, resume, place.threads, place.replicas),
      budget(choose_batch_tokens(settled, place, data)),
      finalized(finalize(settled.options, data.tokenizer, budget.tokens)),
      config(settled.options),
      model(make_model(config, resume, place.device, place.replicas)),
      validation(config, files.paths, data.tokenizer, model, place.main()),
      training(config.optim, model, resume, place.main()),
      clock(started, training.progress.elapsed_s, settled.max_time_s),
      batcher(make_batcher(data.corpora, data.samples, files.paths, config.data.sampling_temperature,
                           batcher_options(config, place.replicas),
                           training.progress.data)),
      logs(folder, resume, settled.text, config.run.tensorboard, place.main()),
      leaks(report_data(config, batcher, files, data, place.main())) {}

namespace {

// A language identifier learned from up to kLines lines of each language the corpora hold (as the
// token caches hold them, decoded; a source without its tag): for eval's off-target rate on a model
// of several target languages (the source languages are among them: a source copied through
// untranslated is off target too), and for serve's and translate's source "auto", which tells
// short strings apart by it where CLD2 cannot. A model of one language (src = tgt) needs none.
std::string learn_language_id(const Session& s) {
  const bool several = run_config::target_languages(s.config).size() >= 2;
  if (!several && s.config.data.src_lang == s.config.data.tgt_lang) return "";
  const int64_t kLines = several ? 20000 : 10000;
  std::map<std::string, std::vector<std::string>> lines;
  const auto learn = [&](const std::string& language, const int32_t* ids, int64_t length) {
    auto& into = lines[language];
    if (static_cast<int64_t>(into.size()) < kLines) {
      into.push_back(s.data.tokenizer.decode(std::vector<int>(ids, ids + length)));
    }
  };
  for (size_t i = 0; i < s.data.corpora.size(); ++i) {
    const auto& spec = s.files.paths.train[i];
    const auto& corpus = s.data.corpora[i].corpus;
    const auto& source = run_config::source_language(spec, s.config.data);
    const auto& target = run_config::target_language(spec, s.config.data);
    const int64_t tag = spec.tag.empty() ? 0 : 1;
    for (int64_t pair = 0; pair < corpus.size() && pair < kLines; ++pair) {
      learn(target, corpus.target(pair), corpus.target_length(pair));
      learn(source, corpus.source(pair) + tag, corpus.source_length(pair) - tag);
    }
  }
  return metrics::LanguageId::learn(lines).to_json();
}

}  // namespace

std::vector<run_config::Choice> Session::choices() const {
  std::vector<run_config::Choice> made;
  const auto& preset = settled.preset;
  made.push_back({"preset", preset.name, preset.why});
  for (const auto& key : preset.set) {
    made.push_back({key, run_config::format_value(*run_config::find_config_key(key), config),
                    "the " + preset.name + " preset; options given keep their values"});
  }
  if (!budget.reason.empty()) made.push_back({"batch-tokens", std::to_string(budget.tokens), budget.reason});
  const auto pieces = data.tokenizer.vocab_size();
  if (resumed() || fine_tuned()) {
    made.push_back({"vocab-size", std::to_string(pieces), "the tokenizer of the checkpoint the run starts from"});
  } else if (!config.vocab_from.empty()) {
    made.push_back({"vocab-size", std::to_string(pieces), "the tokenizer of " + config.vocab_from + " (--vocab-from)"});
  } else if (pieces < config.vocab.vocab_size) {
    made.push_back({"vocab-size", std::to_string(pieces),
                    "the training text supports " + std::to_string(pieces) + " pieces, not the " +
                        std::to_string(config.vocab.vocab_size) + " asked for"});
  }
  made.push_back({"precision", place.precision.name(), place.precision.reason});
  made.push_back({"validation-precision", validation.decoding_precision.name(), validation.decoding_precision.reason});
  if (place.device.is_cuda()) made.push_back({"cuda-graphs", place.cuda_graphs ? "on" : "off", place.cuda_graphs_reason});
  if (config.machine.threads == 0) {
    made.push_back({"threads", std::to_string(place.threads),
                    place.load ? "--threads 0: the cores other processes leave free, followed as the load changes"
                               : "--threads 0: every core, shared among this machine's ranks"});
  }
  if (config.machine.device == "auto") {
    made.push_back({"device", place.device.str(), "--device auto: CUDA where there is a GPU, else the CPU"});
  }
  return made;
}

checkpoint::Checkpoint run_description(const Session& s) {
  checkpoint::Checkpoint about;
  about.model_config = s.config.model;
  about.tokenizer = s.data.tokenizer.to_bytes();
  about.config = s.settled.text;
  about.inference.src_lang = s.config.data.src_lang;
  about.inference.tgt_lang = s.config.data.tgt_lang;
  about.inference.tags = corpus_tags(s.files.paths);
  about.inference.language_id = learn_language_id(s);
  return about;
}

}  // namespace trafo::train
