// Reading a run folder's metrics.jsonl back (docs/design.md "metrics.jsonl") for `trafo report`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trafo::report {

struct RunMetrics {
  std::string name;                    // the folder as the user named it; legends show it
  std::filesystem::path dir;           // the run folder
  std::vector<nlohmann::json> events;  // objects with "event", "step" and "time_s", in file order
  std::vector<std::string> problems;   // "runs/x/metrics.jsonl line 7: ..." for each line left out
};

// Reads DIR/metrics.jsonl. A malformed line (not JSON, not an object, no "event"/"step"/"time_s")
// is left out and described in `problems`; blank lines are ignored. Throws trafo::InputError for
// a missing folder, a missing or unreadable metrics.jsonl, or one without a single usable event.
RunMetrics read_run(const std::filesystem::path& dir);

// The valid event of the best validation (the last one marked best), or null when none is.
const nlohmann::json* best_validation(const RunMetrics& run);

}  // namespace trafo::report
