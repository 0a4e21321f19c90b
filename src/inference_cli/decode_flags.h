// What the inference commands share: the decoding flags, and the flags of the device, threads,
// precision and tag that loading a model for translation takes (inference/loaded_model.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trafo/inference/loaded_model.h"
#include "trafo/inference/translation.h"

namespace CLI {
class App;
}

namespace trafo::cli {


// --beam, --length-penalty, [--n-best,] --max-length-a, --max-length-b, --no-repeat-ngram,
// --repetition-penalty, --batch-tokens.
void add_decode_flags(CLI::App& command, inference::SearchOptions& options, bool with_n_best);
// --retry-off-target (translate, eval, serve): the language check of a model of several targets.
void add_language_check_flag(CLI::App& command, inference::SearchOptions& options);
// --sampling-topk, --sampling-topp, --sampling-temperature, --seed (translate: back-translation).
void add_sampling_flags(CLI::App& command, inference::SearchOptions& options);
// --checkpoint, --device, --threads and, `with_precision`, --precision and --tag.
// `ensemble`: --checkpoint may be given more than once (translate, eval).
void add_runtime_flags(CLI::App& command, inference::RuntimeOptions& options, bool with_precision = true, bool ensemble = false);

}  // namespace trafo::cli
