// What a run's own metrics say about its length, in a sentence each: that it ended while still
// improving (more steps would help), or that it went on while overfitting. train.log and the `end`
// event of metrics.jsonl carry them when a run ends, and `trafo report` shows them.
#pragma once

#include <string>
#include <vector>

#include "trafo/report/metrics_reader.h"

namespace trafo::report {

// The rules (docs/guide-own-data.md "When to stop"), on the run's `valid` and `train` events:
// - still improving: at least 3 validations, and the last one is the run's best (by its early-stopping
//   metric, as each `valid` event's "best" says);
// - overfitting: dev loss rose at each of the last 3 or more validations, while the mean training
//   loss logged between the last two of them is below the mean logged before the first rise.
// Empty when neither holds.
std::vector<std::string> run_advice(const RunMetrics& run);

}  // namespace trafo::report
