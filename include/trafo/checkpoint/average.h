// `trafo average`: the mean of the weights of several checkpoints of one model, as a checkpoint
// for translation (weights, tokenizer, config; no training state).
#pragma once

#include <filesystem>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::checkpoint {

// Loads each file and averages its weights (summed in float64, so the mean of copies of one
// checkpoint is that checkpoint exactly). Checkpoints of different models or tokenizers throw
// trafo::InputError naming the file and the difference.
Checkpoint average(const std::vector<std::filesystem::path>& paths);

// The run folder's numbered checkpoints (checkpoint-STEP.pt), the `count` of highest step, oldest
// first; fewer than `count` throws trafo::InputError.
std::vector<std::filesystem::path> last_numbered(const std::filesystem::path& run_dir, int64_t count);

}  // namespace trafo::checkpoint
