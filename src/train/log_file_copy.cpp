#include "trafo/train/log_file_copy.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "trafo/errors.h"

namespace trafo::train {

// A file sink that notices failed writes (a full disk): spdlog's own would report them on stderr
// and go on, leaving train.log silently empty.
class CheckedFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit CheckedFileSink(const std::filesystem::path& path) : path_(path.string()) {
    file_ = std::fopen(path_.c_str(), "a");
    if (file_ == nullptr) throw_write_error(path_, errno);
  }
  ~CheckedFileSink() override { std::fclose(file_); }
  std::string error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
      if (error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(errno);
    }
  }
  void flush_() override { std::fflush(file_); }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string error_;  // the first failed write
};

LogFileCopy::LogFileCopy(const std::filesystem::path& path) : sink_(std::make_shared<CheckedFileSink>(path)) {
  sink_->set_pattern("[%Y-%m-%d %H:%M:%S] [%l] %v");
  spdlog::default_logger()->sinks().push_back(sink_);
}

LogFileCopy::~LogFileCopy() {
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
}

void LogFileCopy::check() const {
  const auto error = sink_->error();
  if (!error.empty()) throw RunError(error);
}

}  // namespace trafo::train
