// RUN_DIR/train.log: a copy of the log while a run (or a distillation's first stages) lasts, whose
// failed writes (a full disk) are a run-time failure instead of silence.
#pragma once

#include <filesystem>
#include <memory>

namespace trafo::train {

class CheckedFileSink;

class LogFileCopy {
 public:
  explicit LogFileCopy(const std::filesystem::path& path);
  ~LogFileCopy();
  LogFileCopy(const LogFileCopy&) = delete;
  LogFileCopy& operator=(const LogFileCopy&) = delete;
  // A line that could not be written is a run-time failure: RunError.
  void check() const;

 private:
  std::shared_ptr<CheckedFileSink> sink_;
};

}  // namespace trafo::train
