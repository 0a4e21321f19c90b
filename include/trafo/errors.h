// Typed errors thrown at the library boundary; the CLI maps them to exit codes
// (docs/design.md "Exit codes") and prints their message as one line.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace trafo {

// Bad usage or bad input (options, config, data files, checkpoints): exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure at run time (repeated NaN loss, a full disk, a lost rank): exit code 1.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The one rule for a file that cannot be written, followed by every writer and by the CLI's mapping
// of filesystem errors: the machine failed at run time (a full disk or quota, an I/O error, a file
// over its size limit, no memory or file descriptors left: ENOSPC, EDQUOT, EIO, EFBIG, ENOMEM,
// EMFILE, ENFILE) is a RunError, exit 1; anything else says the path cannot be written (no
// permission, read-only, not a folder, missing: EACCES, EROFS, ENOTDIR, ENOENT, ...): InputError, 2.
inline bool is_run_time_failure(int error_number) {
  switch (error_number) {
    case ENOSPC: case EDQUOT: case EIO: case EFBIG: case ENOMEM: case EMFILE: case ENFILE:
      return true;
    default:
      return false;
  }
}

// Throws by that rule "cannot write WHAT: REASON", with "; ADVICE" (how to fix the path) for bad input.
[[noreturn]] inline void throw_write_error(const std::string& what, int error_number, const std::string& advice = "") {
  const std::string message = "cannot write " + what + ": " + std::strerror(error_number);
  if (is_run_time_failure(error_number)) throw RunError(message);
  throw InputError(advice.empty() ? message : message + "; " + advice);
}

}  // namespace trafo
