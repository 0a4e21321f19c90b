// Typed errors thrown at the library boundary; the CLI maps them to exit codes
// (docs/design.md "Exit codes") and prints their message as one line.
#pragma once

#include <stdexcept>

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

}  // namespace trafo
