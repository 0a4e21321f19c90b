// metrics.jsonl: one JSON object per line per event (docs/design.md "metrics.jsonl").
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace trafo::train {

class MetricsLog {
 public:
  // Appends to `path` (a resumed run continues its file).
  explicit MetricsLog(const std::filesystem::path& path);
  // Writes {"event": event, "step": step, "epoch": epoch, "time_s": time_s, ...fields} and flushes;
  // RunError when the line cannot be written (a full disk).
  void write(const std::string& event, int64_t step, int64_t epoch, double time_s, nlohmann::json fields = {});

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace trafo::train
