// What the training loop writes of a validation and of a run's end, besides the checkpoints: the
// fields of their metrics.jsonl records and their lines in the log. Internal to train/.
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "trafo/train/validator.h"

namespace trafo::train {

class StepGraphs;

// The `valid` record's fields for `result` at `step` (`best`: the best so far); its lines logged (the
// figures, each direction's, and the samples).
nlohmann::json report_validation(int64_t step, const ValidationResult& result, bool best);

// Whether the run in `folder` ended while still improving, or went on while overfitting
// (report/run_advice.h), from its metrics.jsonl, earlier sessions included: each sentence logged, and
// all in the end record's "advice". Advice only: a file that cannot be read gives none.
void report_advice(const std::filesystem::path& folder, nlohmann::json& end);

// Who set the pace: the end record's queue_s and device_wait_s (the seconds the host spent preparing and
// queueing steps, and waiting for the device), and on CUDA a log line saying which, and what the CUDA
// graphs (null: none) did over the run's `steps`.
void report_pace(double queue_s, double wait_s, bool cuda, const StepGraphs* graphs, int64_t steps,
                 nlohmann::json& end);

}  // namespace trafo::train
