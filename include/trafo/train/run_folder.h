// The run folder: checkpoint-last.pt, checkpoint-best.pt, checkpoint-STEP.pt (the last N),
// metrics.jsonl, train.log, config.toml.
#pragma once

#include <filesystem>
#include <string>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::train {

class RunFolder {
 public:
  explicit RunFolder(std::filesystem::path path) : path_(std::move(path)) {}

  // Prepares the folder: true when it holds a run to resume. Refuses to replace an existing run
  // with --no-resume unless `overwrite` (then the old run's files are removed).
  bool prepare(bool no_resume, bool overwrite) const;

  std::filesystem::path last() const { return path_ / "checkpoint-last.pt"; }
  std::filesystem::path best() const { return path_ / "checkpoint-best.pt"; }
  std::filesystem::path numbered(int64_t step) const {
    return path_ / ("checkpoint-" + std::to_string(step) + ".pt");
  }
  std::filesystem::path metrics() const { return path_ / "metrics.jsonl"; }
  std::filesystem::path log() const { return path_ / "train.log"; }
  std::filesystem::path config() const { return path_ / "config.toml"; }
  const std::filesystem::path& path() const { return path_; }

  // Saves a numbered checkpoint and removes the oldest beyond `keep`.
  void save_numbered(int64_t step, const checkpoint::Checkpoint& checkpoint, int64_t keep) const;

 private:
  std::filesystem::path path_;
};

}  // namespace trafo::train
