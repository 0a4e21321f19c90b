// Helpers shared by the tests: temporary folders and running the trafo binary.
#pragma once

#include <filesystem>
#include <string>

namespace trafo::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout
  std::string errors;  // stderr
};

// Runs `command` through /bin/sh with stdout and stderr captured separately.
CommandResult run_command(const std::string& command);

// Runs the trafo binary under test with `arguments` (already shell-quoted).
CommandResult run_trafo(const std::string& arguments);

// A fresh, empty folder under the system's temporary folder, removed at process exit.
std::filesystem::path make_temp_dir(const std::string& prefix);

void write_text(const std::filesystem::path& path, const std::string& text);
std::string read_text(const std::filesystem::path& path);

}  // namespace trafo::testing
