#include "trafo/train/run_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <regex>
#include <vector>

#include <spdlog/spdlog.h>

#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::train {
namespace {

bool is_checkpoint(const std::string& name) {
  static const std::regex pattern("checkpoint-(last|best|[0-9]+)\\.pt");
  return std::regex_match(name, pattern);
}

// util::write_file_atomically's temporaries, NAME.tmp-PID, of a process that is gone: another
// command (`trafo average --out RUN/avg.pt`) may be writing one of its own here right now, and a
// user's file that merely looks like one is not ours to remove.
bool is_stale_temporary(const std::string& name) {
  const auto at = name.rfind(".tmp-");
  if (at == std::string::npos) return false;
  const std::string pid = name.substr(at + 5);
  if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  return ::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH;
}

}  // namespace

void RunFolder::check_files_in(const std::filesystem::path& folder) {
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) return;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const auto name = entry.path().filename().string();
    const bool file = is_checkpoint(name) || name == "metrics.jsonl" || name == "train.log" || name == "config.toml" ||
                      name == ".lock";
    auto kind = file ? util::special_kind(entry.path()) : std::string();
    if (kind.rfind("a link to ", 0) == 0) kind.clear();  // replaced by the next save; a resume names it
    // A log may be a device (/dev/null to keep none), written through as any output; never a pipe.
    if ((name == "train.log" || name == "metrics.jsonl") && kind == "a character device") kind.clear();
    if (name == "tensorboard" && !std::filesystem::is_directory(entry.path(), error)) kind = "not a folder";
    if (!kind.empty()) {
      throw InputError("run folder " + folder.string() + ": " + name + " is " + kind +
                       ", where the run keeps a file of its own: remove it, or use another --run-dir");
    }
  }
}

RunFolder::RunFolder(std::filesystem::path path, bool lock) : path_(std::move(path)) {
  std::error_code error;
  std::filesystem::create_directories(path_, error);
  if (error) throw_write_error("the run folder " + path_.string(), error.value());
  if (!std::filesystem::is_directory(path_)) throw InputError("cannot create the run folder " + path_.string());
  if (!lock) return;
  check_files_in(path_);
  const auto lock_path = path_ / ".lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw_write_error(lock_path.string(), errno);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {0};
    const ssize_t n = ::pread(lock_fd_, holder, sizeof holder - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw InputError("run folder " + path_.string() + " is in use by another trafo train or distill" +
                     (n > 0 ? " (process " + std::string(holder, static_cast<size_t>(n)) + ")" : std::string()) +
                     "; wait for it to end or use another --run-dir");
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    spdlog::debug("cannot note the process id in {}", lock_path.string());
  }
  // Holding the lock, no other trafo writes here: every temporary is a killed run's.
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file() && is_stale_temporary(name)) {
      spdlog::info("removing {}, left by a run that was killed while writing it", entry.path().string());
      std::filesystem::remove(entry.path(), error);
    }
  }
}

RunFolder::~RunFolder() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::vector<std::filesystem::path> RunFolder::checkpoints_in(const std::filesystem::path& folder) {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> found;
  std::error_code missing;
  if (!std::filesystem::is_directory(folder, missing)) return {};
  const auto last = folder / "checkpoint-last.pt";
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::error_code error;
    if (!is_checkpoint(entry.path().filename().string())) continue;
    // A dangling link is listed too, so that the resume names it among what it passes over.
    if (entry.is_symlink(error) && !entry.exists(error)) {
      found.emplace_back(std::filesystem::file_time_type::min(), entry.path());
      continue;
    }
    if (!entry.is_regular_file(error)) continue;
    const auto time = entry.last_write_time(error);
    if (!error) found.emplace_back(time, entry.path());
  }
  // Newest first; at equal times checkpoint-last.pt, which every save path writes, before the others.
  std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return (a.second == last) > (b.second == last);
  });
  std::vector<std::filesystem::path> paths;
  for (auto& item : found) paths.push_back(std::move(item.second));
  return paths;
}

void RunFolder::replace_old_run() const {
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    const auto name = entry.path().filename().string();
    if (is_checkpoint(name) || name == "metrics.jsonl" || name == "train.log" || name == "config.toml") {
      std::filesystem::remove(entry.path());
    } else if (name == "tensorboard") {
      util::remove_tree(entry.path());
    }
  }
}

void RunFolder::save_numbered(int64_t step, const checkpoint::Checkpoint& checkpoint, int64_t keep) const {
  if (keep <= 0) return;
  checkpoint::save(numbered(step), checkpoint, util::Special::kReplace);
  const auto steps = checkpoint::numbered_checkpoints(path_);
  for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i) std::filesystem::remove(steps[i].second);
}

}  // namespace trafo::train
