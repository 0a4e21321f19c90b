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

// Starts `command` through /bin/sh without waiting; returns its process id.
int spawn_command(const std::string& command);
// Waits up to `seconds` for process `pid`: its exit code (128 + signal when killed), or -1 on timeout.
int wait_for_exit(int pid, double seconds);
// A TCP port on loopback that was free a moment ago.
int free_port();

void write_text(const std::filesystem::path& path, const std::string& text);
std::string read_text(const std::filesystem::path& path);

}  // namespace trafo::testing
