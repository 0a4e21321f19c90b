// Helpers shared by the tests: temporary folders, running the trafo binary, and the tools that
// scripts/setup.sh installs (the project's Python and its modules, Chromium).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
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

// A folder that `make` fills, kept in the build tree (build/tests/KIND/HASH) under a hash of `key`, so
// that tests in other processes, and later runs, make it once. It is made beside its place and renamed
// into it: a test running at the same time sees the whole folder or none. The kept folder, or an empty
// path when `make` returned false (nothing is kept then).
std::filesystem::path kept_folder(const std::string& kind, const std::string& key,
                                  const std::function<bool(const std::filesystem::path&)>& make);

// The size and modification time of the trafo binary under test: a key for what it made.
std::string trafo_binary_stamp();

// Whether CI=true, where a missing tool that scripts/setup.sh installs fails a test instead of skipping it.
bool in_ci();
// Whether the project's own Python (TRAFO_PYTHON, .venv/bin/python) has `module` (found, not imported).
bool python_can_import(const std::string& module);

}  // namespace trafo::testing

// In a test body: unless `present`, ends the test, as a failure under CI=true (docs/design.md "Testing
// rules") and as a skip elsewhere. `what` names the missing tool (anything that streams).
#define TRAFO_REQUIRE_TOOL(present, what)                                                                          \
  do {                                                                                                             \
    if (!(present)) {                                                                                              \
      if (::trafo::testing::in_ci()) FAIL() << what << " is missing under CI=true (scripts/setup.sh installs it)"; \
      GTEST_SKIP() << what << " is missing (scripts/setup.sh installs it)";                                        \
    }                                                                                                              \
  } while (false)

// The same for a module of the project's Python, e.g. TRAFO_REQUIRE_PYTHON_MODULE("torch").
#define TRAFO_REQUIRE_PYTHON_MODULE(module)                       \
  TRAFO_REQUIRE_TOOL(::trafo::testing::python_can_import(module), \
                     "Python module " << (module) << " of " << TRAFO_PYTHON)
