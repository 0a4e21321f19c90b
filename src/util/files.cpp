#include "trafo/util/files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "trafo/errors.h"
#include "trafo/test_hooks.h"

namespace trafo::util {

void remove_tree(const std::filesystem::path& path) {
  auto remove_entry = [](const char* entry, const struct stat*, int, struct FTW*) { return ::remove(entry); };
  ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

namespace {

// Writes all of `bytes` to `fd`, again after a signal or a short write; returns the errno of why it
// could not (a write that takes nothing counts as a full disk), or 0.
int write_all(int fd, const std::string& bytes) {
  // Test hook (tests/kill_test.cpp): write in 64 KB pieces, pausing this many ms after each, so that
  // a SIGKILL lands inside a write.
  const int slow_ms = test_hooks().slow_writes_ms;
  const size_t piece = slow_ms > 0 ? size_t{1} << 16 : bytes.size();
  size_t written = 0;
  while (written < bytes.size()) {
    if (slow_ms > 0 && written > 0) ::usleep(static_cast<useconds_t>(slow_ms) * 1000);
    const ssize_t n = ::write(fd, bytes.data() + written, std::min(piece, bytes.size() - written));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    written += static_cast<size_t>(n);
  }
  return 0;
}

// Writes `bytes` into the device, pipe or link at `path` as it is: renaming a file over it would put
// a regular file where /dev/full or the link /dev/stdout was.
// A named pipe is opened without waiting: with no process reading it, open() would block for good,
// deaf to SIGTERM; it is an error instead.
void write_in_place(const std::filesystem::path& path, const std::string& bytes, bool truncate) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | (truncate ? O_TRUNC : 0));
  if (fd < 0 && errno == ENXIO) {
    throw InputError("cannot write " + path.string() + ": it is a named pipe that no process reads");
  }
  if (fd < 0) throw_write_error(path.string(), errno);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int error = write_all(fd, bytes);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) throw_write_error(path.string(), error);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes, Special special) {
  struct stat existing {}, link {};
  if (::stat(path.c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) throw InputError("cannot write " + path.string() + ": it is a folder");
    if (!S_ISREG(existing.st_mode)) {
      if (special == Special::kWriteThrough) return write_in_place(path, bytes, false);
    } else if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      // A link to a file: the file is replaced, the link stays. /dev/stdout redirected to a file
      // is written through: the shell holds that file open.
      std::error_code error;
      const auto system_path = [](const std::string& name) {
        return name.rfind("/dev/", 0) == 0 || name.rfind("/proc/", 0) == 0;
      };
      const auto target = std::filesystem::canonical(path, error);
      if (error || system_path(std::filesystem::absolute(path).string()) ||
          system_path(std::filesystem::read_symlink(path, error).string())) {
        return write_in_place(path, bytes, true);
      }
      return write_file_atomically(target, bytes, special);
    }
  }
  const std::string temporary = path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_write_error(path.string(), errno);
  const int error = write_all(fd, bytes);
  if (error != 0) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw_write_error(path.string(), error);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    throw_write_error(path.string(), error);
  }
}

std::vector<std::string> read_lines(const std::filesystem::path& path, int64_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open " + path.string());
  std::vector<std::string> lines;
  for (std::string line; (limit == 0 || static_cast<int64_t>(lines.size()) < limit) && std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

namespace {

// The file in `folder` or a folder in it (the first 10,000 entries) that is `file` by another name
// (a hard link, a link), or "". (No recursive_directory_iterator: see remove_tree.)
std::filesystem::path file_inside(const std::filesystem::path& folder, const std::filesystem::path& file,
                                  int levels = 2) {
  std::error_code error;
  int seen = 0;
  for (std::filesystem::directory_iterator entries(folder, error), end; !error && entries != end && seen < 10000;
       entries.increment(error), ++seen) {
    std::error_code ignored;
    if (entries->is_regular_file(ignored) && std::filesystem::equivalent(entries->path(), file, ignored)) {
      return entries->path();
    }
    if (levels > 1 && entries->is_directory(ignored) && !entries->is_symlink(ignored)) {
      if (auto found = file_inside(entries->path(), file, levels - 1); !found.empty()) return found;
    }
  }
  return {};
}

bool is_empty_folder(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) && std::filesystem::is_empty(path, error);
}

void rename_or_throw(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code error;
  std::filesystem::rename(from, to, error);
  if (error) throw_write_error(to.string() + " (renaming " + from.string() + ")", error.value());
}

}  // namespace

void write_folder_atomically(const std::filesystem::path& folder,
                             const std::vector<std::pair<std::string, std::string>>& files, bool replace) {
  namespace fs = std::filesystem;
  // "ct2/" names the folder ct2: its staging folder goes beside it, not into it.
  const fs::path out = folder.has_filename() ? folder : folder.parent_path();
  if (out.empty()) throw InputError("--out must name a folder, not " + folder.string());
  const bool exists = fs::exists(fs::symlink_status(out));
  if (exists && !replace && !is_empty_folder(out)) {
    throw InputError(out.string() + " exists and is not empty; use --force to replace it");
  }
  if (exists && !fs::is_directory(out)) throw InputError(out.string() + " exists and is not a folder");
  const fs::path staging = out.string() + ".tmp-" + std::to_string(::getpid());
  remove_tree(staging);
  std::error_code error;
  fs::create_directories(staging, error);
  if (error) throw_write_error(staging.string(), error.value());
  try {
    for (const auto& [name, bytes] : files) write_file_atomically(staging / name, bytes);
    if (exists) {
      const fs::path old = out.string() + ".old-" + std::to_string(::getpid());
      rename_or_throw(out, old);
      try {
        rename_or_throw(staging, out);
      } catch (...) {
        fs::rename(old, out, error);  // the old folder back where it was
        throw;
      }
      remove_tree(old);
    } else {
      rename_or_throw(staging, out);
    }
  } catch (...) {
    remove_tree(staging);
    throw;
  }
}

PipeHold::PipeHold(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_fifo(path, error)) return;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0 && errno == ENXIO) {
    throw InputError("cannot write " + path.string() + ": it is a named pipe that no process reads");
  }
}

PipeHold::~PipeHold() {
  if (fd_ >= 0) ::close(fd_);
}

std::string special_kind(const std::filesystem::path& path) {
  std::error_code error;
  const auto link = std::filesystem::symlink_status(path, error);
  if (error || !std::filesystem::exists(link)) return "";
  const auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) {
    return "a link to " + std::filesystem::read_symlink(path, error).string() + ", which does not exist";
  }
  if (std::filesystem::is_regular_file(status)) return "";
  if (std::filesystem::is_directory(status)) return "a folder";
  if (std::filesystem::is_fifo(status)) return "a named pipe (FIFO)";
  if (std::filesystem::is_character_file(status)) return "a character device";
  if (std::filesystem::is_block_file(status)) return "a block device";
  if (std::filesystem::is_socket(status)) return "a socket";
  return "not a regular file";
}

void check_regular_file(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
    throw InputError("cannot read " + path.string() + ": no such file");
  }
  const auto kind = special_kind(path);
  if (!kind.empty()) throw InputError("cannot read " + path.string() + ": it is " + kind);
}

std::string read_file(const std::filesystem::path& path) {
  check_regular_file(path);
  std::error_code error;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path.string());
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw InputError("cannot read " + path.string() + ": " + error.message());
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(in.gcount()));  // a file that shrank while read
  return bytes;
}

namespace {

// The absolute path with links and dots resolved as far as it exists, without a trailing slash.
std::filesystem::path resolved(const std::filesystem::path& path, std::error_code& error) {
  auto full = std::filesystem::weakly_canonical(path, error);
  return full.has_filename() ? full : full.parent_path();
}

}  // namespace

void refuse_overwriting(const std::string& option, const std::filesystem::path& output,
                        const std::vector<NamedPath>& inputs) {
  if (output.empty() || output == "-") return;
  std::error_code out_error;
  const auto out = resolved(output, out_error);
  for (const auto& input : inputs) {
    if (input.path.empty() || input.path == "-") continue;
    std::error_code error;
    if (std::filesystem::equivalent(output, input.path, error)) {
      throw InputError(option + " " + output.string() + " is the " + input.option + " file: writing it would destroy it");
    }
    std::error_code in_error;
    const auto in = resolved(input.path, in_error);
    if (out_error || in_error || !std::filesystem::exists(in, error)) continue;
    const auto [out_end, in_end] = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
    if (out_end == out.end() && in_end != in.end()) {
      throw InputError(option + " " + output.string() + " holds the " + input.option + " file " + input.path.string() +
                       ": writing it would destroy it");
    }
    // A folder input is read file by file: any file already in it may be one the command reads.
    if (in_end == in.end() && out_end != out.end() && std::filesystem::is_directory(in, error) &&
        std::filesystem::exists(out, error)) {
      throw InputError(option + " " + output.string() + " is a file of the " + input.option + " folder " +
                       input.path.string() + ": writing it could destroy what is read from there");
    }
    // ... by any other name too: a hard link to one of its files, or a link into it.
    if (std::filesystem::is_directory(in, error) && std::filesystem::exists(output, error)) {
      if (const auto same = file_inside(in, output); !same.empty()) {
        throw InputError(option + " " + output.string() + " is " + same.string() + " of the " + input.option +
                         " folder by another name: writing it would destroy it");
      }
    }
  }
}

}  // namespace trafo::util
