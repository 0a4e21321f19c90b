// Rank 0's validation of a run: the dev set read once, decoded and scored in the precision `trafo eval`
// would pick for the model on this machine. Part of a train::Session; internal to train/.
#pragma once

#include <optional>

#include "trafo/data/tokenizer.h"
#include "trafo/model/transformer.h"
#include "trafo/run_config/options.h"
#include "trafo/run_config/run_identity.h"
#include "trafo/runtime/precision.h"
#include "trafo/train/validator.h"

namespace trafo::train {

struct Validation {
  // Nothing on ranks other than 0. `model` (on its device) is timed for --precision auto; `tokenizer`
  // must outlive this.
  Validation(const run_config::TrainConfig& config, const run_config::DataFiles& paths,
             const data::Tokenizer& tokenizer, model::Transformer& model, bool main_rank);
  Validation(const Validation&) = delete;
  Validation& operator=(const Validation&) = delete;

  // Validation's: --precision resolved as `trafo eval` does (in-training figures equal a fresh eval's).
  const runtime::Precision decoding_precision;
  std::optional<Validator> validator;  // rank 0's
};

}  // namespace trafo::train
