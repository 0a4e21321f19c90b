#include "run_logs.h"

#include <filesystem>

#include "trafo/util/files.h"

namespace trafo::train {

RunLogs::RunLogs(const RunFolder& folder, const ResumePoint& resume, const std::string& config_text, bool tensorboard,
                 bool main_rank) {
  if (resume.replaces_old_run) folder.replace_old_run();
  if (!main_rank) return;
  std::error_code error;
  at_open_.metrics = folder.metrics();
  at_open_.tensorboard = folder.path() / "tensorboard";
  if (std::filesystem::is_regular_file(at_open_.metrics, error)) {
    at_open_.metrics_size = std::filesystem::file_size(at_open_.metrics, error);
    if (error) at_open_.metrics_size = 0;
  }
  at_open_.tensorboard_existed = std::filesystem::exists(at_open_.tensorboard, error);
  log_file_.emplace(folder.log());
  metrics_.emplace(at_open_.metrics);
  if (tensorboard) tensorboard_.emplace(at_open_.tensorboard);
  if (resume.path.empty()) util::write_file_atomically(folder.config(), config_text, util::Special::kReplace);
}

void RunLogs::AtOpen::restore() const {
  std::error_code error;
  if (metrics_size > 0) {
    std::filesystem::resize_file(metrics, metrics_size, error);
  } else {
    std::filesystem::remove(metrics, error);
  }
  if (!tensorboard_existed) util::remove_tree(tensorboard);
}

void RunLogs::record(const std::string& event, int64_t step, int64_t epoch, double elapsed_s,
                     const nlohmann::json& fields) {
  if (log_file_) log_file_->check();
  if (metrics_) metrics_->write(event, step, epoch, elapsed_s, fields);
  if (tensorboard_ && (event == "train" || event == "valid")) tensorboard_->scalars(event, fields, step);
}

}  // namespace trafo::train
