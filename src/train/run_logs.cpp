#include "run_logs.h"

#include <filesystem>

#include "trafo/util/files.h"

namespace trafo::train {

RunLogs::RunLogs(const RunFolder& folder, const ResumePoint& resume, const std::string& config_text, bool tensorboard,
                 bool main_rank) {
  if (resume.replaces_old_run) folder.replace_old_run();
  if (!main_rank) return;
  std::error_code error;
  if (std::filesystem::is_regular_file(folder.metrics(), error)) {
    metrics_size_at_open_ = std::filesystem::file_size(folder.metrics(), error);
    if (error) metrics_size_at_open_ = 0;
  }
  tensorboard_existed_ = std::filesystem::exists(folder.path() / "tensorboard", error);
  log_file_.emplace(folder.log());
  metrics_.emplace(folder.metrics());
  if (tensorboard) tensorboard_.emplace(folder.path() / "tensorboard");
  if (resume.path.empty()) util::write_file_atomically(folder.config(), config_text);
}

void RunLogs::record(const std::string& event, int64_t step, int64_t epoch, double elapsed_s,
                     const nlohmann::json& fields) {
  if (log_file_) log_file_->check();
  if (metrics_) metrics_->write(event, step, epoch, elapsed_s, fields);
  if (tensorboard_ && (event == "train" || event == "valid")) tensorboard_->scalars(event, fields, step);
}

}  // namespace trafo::train
