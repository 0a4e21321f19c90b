// What rank 0 writes of a run while it trains: train.log (a copy of the log), metrics.jsonl and, with
// --tensorboard, TensorBoard event files; and a new run's config.toml. Part of a train::Session;
// internal to train/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trafo/train/metrics_log.h"
#include "trafo/train/run_folder.h"
#include "trafo/train/tensorboard.h"
#include "trafo/train/log_file_copy.h"
#include "resume_choice.h"

namespace trafo::train {

class RunLogs {
 public:
  // Made once everything is read and checked: only now may a new run replace the old run of `folder`
  // (resume.replaces_old_run). Rank 0 then opens the logs and a new run writes `config_text` as its
  // config.toml; other ranks write nothing.
  RunLogs(const RunFolder& folder, const ResumePoint& resume, const std::string& config_text, bool tensorboard,
          bool main_rank);
  RunLogs(const RunLogs&) = delete;
  RunLogs& operator=(const RunLogs&) = delete;

  // An event of metrics.jsonl (docs/design.md "metrics.jsonl"); `train` and `valid` go to TensorBoard
  // too. RunError when train.log or metrics.jsonl could not be written (a full disk).
  void record(const std::string& event, int64_t step, int64_t epoch, double elapsed_s, const nlohmann::json& fields);

  // What the folder held before this session wrote (a new run appends to the records of an earlier
  // one that saved no checkpoint): metrics.jsonl's size, and whether tensorboard/ was there.
  struct AtOpen {
    std::filesystem::path metrics, tensorboard;
    std::uintmax_t metrics_size = 0;
    bool tensorboard_existed = false;
    // Puts the folder back as it was, once the session is gone (its logs closed): its records leave
    // metrics.jsonl, and tensorboard/ goes if the session made it. train.log keeps what it said.
    void restore() const;
  };
  const AtOpen& at_open() const { return at_open_; }

 private:
  AtOpen at_open_;
  std::optional<LogFileCopy> log_file_;
  std::optional<MetricsLog> metrics_;
  std::optional<TensorBoardWriter> tensorboard_;
};

}  // namespace trafo::train
