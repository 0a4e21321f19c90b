// File helpers that hold up next to LibTorch.
//
// The torch wheel's libtorch.so exports its own copy of std::filesystem, and symbol lookup
// finds it before libstdc++'s; its remove_all() jumps to a null pointer. Code that links
// LibTorch removes folders with remove_tree() below, never std::filesystem::remove_all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace trafo::util {

// Removes `path` and everything below it; a missing path is fine.
void remove_tree(const std::filesystem::path& path);

// What write_file_atomically does with a device, a pipe or a socket at its path.
enum class Special {
  kWriteThrough,  // write into it in place: an output the user named (/dev/full, /dev/stdout)
  kReplace,       // replace it by the file: a file trafo names itself (a cache, a run's checkpoint)
};

// Writes `bytes` to a temporary file in the same folder, flushes it to disk, then renames it
// over `path`: a reader sees the old file or the new one, never a torn one.
// A write refused throws by trafo::throw_write_error's rule (trafo/errors.h: a full disk is a
// RunError; no permission or a missing folder an InputError), leaving `path` untouched. A device,
// a pipe or a link to one at `path` is handled as `special` says (a named pipe that no process
// reads is an InputError, never a wait); a link to a file writes the file; a folder there is
// trafo::InputError.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes,
                           Special special = Special::kWriteThrough);

// Writes the folder `folder` holding `files` (name -> bytes) so that it appears complete or not at
// all: everything goes into FOLDER.tmp-PID beside it, which then takes its place. An existing
// folder is an InputError unless it is empty or `replace`; a replaced folder is removed only once
// the new one is in place. A write refused throws by trafo::throw_write_error's rule
// (trafo/errors.h), and nothing of the new folder stays.
void write_folder_atomically(const std::filesystem::path& folder, const std::vector<std::pair<std::string, std::string>>& files,
                             bool replace);

// Throws trafo::InputError unless `path` is a regular file: missing, a folder, a device or a pipe
// (which has no size to bound a read by, and may never end or never answer), a dangling link.
void check_regular_file(const std::filesystem::path& path);

// Where `path` is a named pipe, opens it for writing without waiting, and holds it open while it
// lives: InputError when no process reads it (an open() of one's own would wait for a reader for
// good). Hold it until the output is opened for good, so that the reader never sees an end of its
// input between the two. Anything but a pipe: nothing.
class PipeHold {
 public:
  explicit PipeHold(const std::filesystem::path& path);
  ~PipeHold();
  PipeHold(const PipeHold&) = delete;
  PipeHold& operator=(const PipeHold&) = delete;

 private:
  int fd_ = -1;
};

// What `path` is when it is neither a regular file (or a link to one) nor absent: "a folder", "a
// named pipe (FIFO)", "a character device", "a block device", "a socket", "a link to TARGET, which
// does not exist"; "" otherwise.
std::string special_kind(const std::filesystem::path& path);

// The whole file; throws trafo::InputError as check_regular_file, or when it cannot be read: what
// is read is bounded by the file's size.
std::string read_file(const std::filesystem::path& path);

// The lines of a text file, at most `limit` (0: all), without their '\n' or a '\r' before it;
// trafo::InputError when it cannot be opened.
std::vector<std::string> read_lines(const std::filesystem::path& path, int64_t limit = 0);

// An input of a command as the user named it: its option ("--ref") and path.
struct NamedPath {
  std::string option;
  std::filesystem::path path;
};

// Throws trafo::InputError when writing `output` (given as `option`) would destroy one of `inputs`:
// it is the same file, by any path or link, or a folder that holds it (a folder output is
// replaced whole), or a file that already exists inside an input that is a folder (a command reads
// such a folder file by file). Missing inputs, "-" (a standard stream) and empty paths are skipped.
void refuse_overwriting(const std::string& option, const std::filesystem::path& output,
                        const std::vector<NamedPath>& inputs);

}  // namespace trafo::util
