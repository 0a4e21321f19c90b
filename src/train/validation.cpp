#include "validation.h"

#include "trafo/decode/precision_probe.h"

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

std::optional<Validator> make_validator(const TrainConfig& c, const run_config::DataFiles& paths,
                                        const data::Tokenizer& tokenizer, bool main_rank, bool bf16) {
  if (!main_rank) return std::nullopt;
  return Validator(paths.dev_src, paths.dev_tgt, tokenizer, c.run.valid_max_sentences, c.run.valid_samples,
                   c.model.max_positions, bf16, c.run.valid_tag.empty() ? -1 : tokenizer.reserved_id(c.run.valid_tag));
}

}  // namespace

Validation::Validation(const TrainConfig& c, const run_config::DataFiles& paths, const data::Tokenizer& tokenizer,
                       model::Transformer& model, bool main_rank)
    : decoding_precision(pick_validation_precision(c, model, main_rank)),
      validator(make_validator(c, paths, tokenizer, main_rank, decoding_precision.bf16)) {}

}  // namespace trafo::train
