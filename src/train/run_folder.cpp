#include "trafo/train/run_folder.h"

#include <algorithm>
#include <regex>
#include <vector>

#include "trafo/errors.h"

namespace trafo::train {

bool RunFolder::prepare(bool no_resume, bool overwrite) const {
  std::error_code error;
  std::filesystem::create_directories(path_, error);
  if (error || !std::filesystem::is_directory(path_)) {
    throw InputError("cannot create the run folder " + path_.string());
  }
  const bool has_run = std::filesystem::exists(last());
  if (!has_run) return false;
  if (!no_resume) return true;
  if (!overwrite) {
    throw InputError("run folder " + path_.string() +
                     " already holds a run: drop --no-resume to continue it, or add --overwrite to start over");
  }
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0 || name == "metrics.jsonl" || name == "train.log" || name == "config.toml") {
      std::filesystem::remove(entry.path());
    }
  }
  return false;
}

void RunFolder::save_numbered(int64_t step, const checkpoint::Checkpoint& checkpoint, int64_t keep) const {
  if (keep <= 0) return;
  checkpoint::save(numbered(step), checkpoint);
  static const std::regex pattern("checkpoint-([0-9]+)\\.pt");
  std::vector<int64_t> steps;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    std::smatch match;
    const auto name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern)) steps.push_back(std::stoll(match[1]));
  }
  std::sort(steps.begin(), steps.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i) std::filesystem::remove(numbered(steps[i]));
}

}  // namespace trafo::train
