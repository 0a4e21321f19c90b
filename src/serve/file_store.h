// The translated documents kept for GET /download_file/NAME (POST /translate_file answers with
// their address), in memory: at most kMaxFiles of them and kMaxBytes in all, the oldest leaving
// first, and none longer than an hour.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace trafo::serve::detail {

class FileStore {
 public:
  static constexpr size_t kMaxFiles = 256;
  static constexpr int64_t kMaxBytes = int64_t{512} << 20;
  static constexpr std::chrono::hours kKeptFor{1};

  struct File {
    std::string name;   // as uploaded (its last path component)
    std::string bytes;
  };

  // Keeps `file`; returns the name it is downloaded by: 32 random hexadecimal digits, a dot and its
  // own name, with anything but letters, digits, '.', '-' and '_' made '_'.
  std::string keep(File file);
  // The file kept as `download_name`, or nullopt.
  std::optional<File> find(const std::string& download_name);

 private:
  struct Kept {
    std::string download_name;
    File file;
    std::chrono::steady_clock::time_point since;
  };
  void drop_old();  // under mutex_

  std::mutex mutex_;
  std::deque<Kept> files_;  // oldest first
  int64_t bytes_ = 0;
};

}  // namespace trafo::serve::detail
