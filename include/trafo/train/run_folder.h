// The run folder: checkpoint-last.pt, checkpoint-best.pt, checkpoint-STEP.pt (the last N),
// metrics.jsonl, train.log, config.toml, and .lock, which one `trafo train` at a time holds.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::train {

class RunFolder {
 public:
  // Creates the folder if needed. With `lock`, takes the folder's lock (flock on RUN_DIR/.lock,
  // held while this object lives) and removes temporary files a killed run left behind; a folder
  // another process holds throws trafo::InputError.
  RunFolder(std::filesystem::path path, bool lock);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  // Throws InputError when a name the run keeps a file under (a checkpoint's, metrics.jsonl,
  // train.log, config.toml, .lock) is a folder, a named pipe, a device (but a log's) or a socket,
  // or tensorboard is not a folder: checked before any work, so that no save meets one at the end.
  // The constructor checks its folder.
  static void check_files_in(const std::filesystem::path& folder);

  // Every checkpoint of the folder, whatever its name, newest first (by modification time); a
  // dangling link of a checkpoint's name is listed last.
  std::vector<std::filesystem::path> checkpoints() const { return checkpoints_in(path_); }
  // The same for any folder (none when it does not exist), without taking its lock.
  static std::vector<std::filesystem::path> checkpoints_in(const std::filesystem::path& folder);
  // The old run's files (checkpoints, logs, config): removed by replace_old_run(), which a new run
  // calls only once everything it needs has been read and checked.
  void replace_old_run() const;

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
  int lock_fd_ = -1;
};

}  // namespace trafo::train
