#include "validation.h"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "trafo/data/corpus.h"
#include "trafo/decode/precision_probe.h"
#include "trafo/util/language_tag.h"

namespace trafo::train {
using run_config::TrainConfig;
namespace {

// Validation decodes and scores in the precision `trafo eval --precision P` picks for this model on the
// same machine (auto times its decoding steps): in-training figures equal a fresh eval's.
runtime::Precision pick_validation_precision(const TrainConfig& c, model::Transformer& model, bool main_rank) {
  if (!main_rank) return runtime::Precision{};
  return runtime::pick_decoding_precision(c.machine.precision, model->parameters().front().device(),
                                          [&] { return decode::bf16_decoding_speedup(model); }, /*quiet=*/true);
}

// The run's dev pair; for a model of several target languages, also a dev pair for each other target
// XX: DIR/dev.SRC-XX.SRC with DIR/dev.SRC-XX.XX (a pair of its own, as fairseq names them), or else
// DIR/dev.SRC with DIR/dev.XX (a multi-way dev set, line by line), where those files are there.
std::vector<DevSet> dev_sets(const TrainConfig& c, const run_config::DataFiles& paths, const data::Tokenizer& tokenizer) {
  const int tag = c.run.valid_tag.empty() ? -1 : tokenizer.reserved_id(c.run.valid_tag);
  const auto targets = run_config::target_languages(c);
  if (targets.size() < 2) return {{"", paths.dev_src, paths.dev_tgt, tag}};
  std::vector<DevSet> sets;
  for (const auto& target : targets) {
    const auto name = c.data.src_lang + "-" + target;
    if (target == c.data.tgt_lang) {
      sets.push_back({name, paths.dev_src, paths.dev_tgt, tag});
      continue;
    }
    if (c.data.data_dir.empty()) {
      spdlog::warn("no dev set for {} (no --data-dir): validation judges the other directions", name);
      continue;
    }
    const std::filesystem::path dir(c.data.data_dir);
    const auto there = [](const std::filesystem::path& file) {
      std::error_code error;
      return std::filesystem::is_regular_file(file, error);
    };
    auto source = dir / ("dev." + name + "." + c.data.src_lang), reference = dir / ("dev." + name + "." + target);
    if (!there(source) || !there(reference)) {
      source = paths.dev_src;
      reference = dir / ("dev." + target);
    }
    if (!there(source) || !there(reference)) {
      spdlog::warn("no dev set for {} (neither {} nor {} is there): validation judges the other directions", name,
                   (dir / ("dev." + name + "." + target)).string(), reference.string());
      continue;
    }
    data::check_parallel_files(source, reference);
    sets.push_back({name, source.string(), reference.string(), tokenizer.reserved_id(util::language_tag(target))});
  }
  std::string names;
  for (const auto& set : sets) names += (names.empty() ? "" : ", ") + set.name;
  spdlog::info("validation: {} dev sets ({}); early stopping and checkpoint-best follow their macro average",
               sets.size(), names);
  return sets;
}

std::optional<Validator> make_validator(const TrainConfig& c, const run_config::DataFiles& paths,
                                        const data::Tokenizer& tokenizer, bool main_rank, bool bf16) {
  if (!main_rank) return std::nullopt;
  return Validator(dev_sets(c, paths, tokenizer), tokenizer, c.run.valid_max_sentences, c.run.valid_samples,
                   c.model.max_positions, bf16);
}

}  // namespace

Validation::Validation(const TrainConfig& c, const run_config::DataFiles& paths, const data::Tokenizer& tokenizer,
                       model::Transformer& model, bool main_rank)
    : decoding_precision(pick_validation_precision(c, model, main_rank)),
      validator(make_validator(c, paths, tokenizer, main_rank, decoding_precision.bf16)) {}

}  // namespace trafo::train
