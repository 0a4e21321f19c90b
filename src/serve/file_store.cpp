#include "file_store.h"

#include <random>

namespace trafo::serve::detail {

namespace {

std::string safe_name(const std::string& name) {
  std::string out = name.substr(name.find_last_of("/\\") == std::string::npos ? 0 : name.find_last_of("/\\") + 1);
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '-' || c == '_';
    if (!plain) c = '_';
  }
  return out.empty() ? "document" : out;
}

std::string random_hex() {
  static thread_local std::random_device device;
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < 4; ++i) {
    auto word = device();
    for (int k = 0; k < 8; ++k, word >>= 4) hex += digits[word & 15];
  }
  return hex;
}

}  // namespace

std::string FileStore::keep(File file) {
  std::lock_guard lock(mutex_);
  file.name = safe_name(file.name);
  const std::string download_name = random_hex() + "." + file.name;
  bytes_ += static_cast<int64_t>(file.bytes.size());
  files_.push_back({download_name, std::move(file), std::chrono::steady_clock::now()});
  drop_old();
  return download_name;
}

std::optional<FileStore::File> FileStore::find(const std::string& download_name) {
  std::lock_guard lock(mutex_);
  drop_old();
  for (const auto& kept : files_) {
    if (kept.download_name == download_name) return kept.file;
  }
  return std::nullopt;
}

void FileStore::drop_old() {
  const auto now = std::chrono::steady_clock::now();
  // The newest stays, however large: it has just been answered with its address.
  const auto over = [&] { return files_.size() > 1 && (files_.size() > kMaxFiles || bytes_ > kMaxBytes); };
  while (!files_.empty() && (over() || now - files_.front().since > kKeptFor)) {
    bytes_ -= static_cast<int64_t>(files_.front().file.bytes.size());
    files_.pop_front();
  }
}

}  // namespace trafo::serve::detail
