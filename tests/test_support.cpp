#include "test_support.h"

#include "trafo/dist/environment.h"
#include "trafo/util/files.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace trafo::testing {
namespace {

std::vector<std::filesystem::path>& temp_dirs() {
  static std::vector<std::filesystem::path> dirs;
  static const bool registered = [] {
    std::atexit([] {
      for (const auto& dir : temp_dirs()) trafo::util::remove_tree(dir);
    });
    return true;
  }();
  (void)registered;
  return dirs;
}

}  // namespace

namespace {

// The commands a test runs keep their token caches and vocabularies (trafo train's --cache-dir
// default) in a folder of the test process, removed at its exit, never in the user's cache.
void use_test_cache_dir() {
  const char* given = std::getenv("TRAFO_CACHE_DIR");
  if (given != nullptr && *given != '\0') return;
  ::setenv("TRAFO_CACHE_DIR", make_temp_dir("cache").c_str(), 1);
}

// Under the `unit` label (TRAFO_TEST_UNIT set, tests/CMakeLists.txt), a test starts no process: one
// that does belongs to `e2e`, and fails saying so instead of running it.
bool refused_in_unit_tests(const std::string& what) {
  const char* unit = std::getenv("TRAFO_TEST_UNIT");
  if (unit == nullptr || *unit == '\0') return false;
  ADD_FAILURE() << "a test labelled unit starts a process (" << what.substr(0, 120)
                << "): list it under e2e in tests/CMakeLists.txt";
  return true;
}

}  // namespace

CommandResult run_command(const std::string& command) {
  if (refused_in_unit_tests(command)) return CommandResult{127, "", "refused in a unit test"};
  use_test_cache_dir();
  const auto dir = make_temp_dir("cmd");
  const auto out_path = dir / "stdout";
  const auto err_path = dir / "stderr";
  const std::string full = "(" + command + ") >'" + out_path.string() + "' 2>'" + err_path.string() + "'";
  const int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = read_text(out_path);
  result.errors = read_text(err_path);
  return result;
}

CommandResult run_trafo(const std::string& arguments) {
  auto result = run_command(std::string("'") + TRAFO_BINARY + "' " + arguments);
  // Every error line, in every test that runs the binary, keeps its reason.
  std::istringstream lines(result.errors);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("trafo: error:", 0) != 0) continue;
    const auto end = line.find_last_not_of(' ');
    if (end == std::string::npos || line[end] == ':' || line.size() > 2100) {
      ADD_FAILURE() << "trafo " << arguments << ": an error line without its reason, or over 2000 characters: " << line;
    }
  }
  return result;
}

std::filesystem::path make_temp_dir(const std::string& prefix) {
  static std::mt19937_64 rng{std::random_device{}()};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("trafo-" + prefix + "-" + std::to_string(rng() % 1000000000));
    if (std::filesystem::create_directory(path)) {
      temp_dirs().push_back(path);
      return path;
    }
  }
  throw std::runtime_error("cannot create a temporary folder");
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::filesystem::path kept_folder(const std::string& kind, const std::string& key,
                                  const std::function<bool(const std::filesystem::path&)>& make) {
  const auto kept = std::filesystem::canonical("/proc/self/exe").parent_path() / kind /
                    std::to_string(std::hash<std::string>{}(key));
  if (std::filesystem::exists(kept)) return kept;
  const auto making = std::filesystem::path(kept.string() + ".making-" + std::to_string(::getpid()));
  std::filesystem::create_directories(kept.parent_path());
  std::error_code taken;  // another test renamed its copy first: keep that one
  if (make(making)) std::filesystem::rename(making, kept, taken);
  util::remove_tree(making);  // std::filesystem::remove_all crashes next to libtorch.so
  return std::filesystem::exists(kept) ? kept : std::filesystem::path();
}

std::string trafo_binary_stamp() {
  const std::filesystem::path binary(TRAFO_BINARY);
  return std::to_string(std::filesystem::file_size(binary)) + " " +
         std::to_string(std::filesystem::last_write_time(binary).time_since_epoch().count());
}

int spawn_command(const std::string& command) {
  if (refused_in_unit_tests(command)) return -1;
  use_test_cache_dir();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int wait_for_exit(int pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0 || std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

bool python_can_import(const std::string& module) {
  // Found, not imported: importing torch or transformers takes seconds, and the check that follows
  // imports it anyway (and fails loudly if it is installed but broken).
  return run_command(std::string("'") + TRAFO_PYTHON + "' -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(\"" +
                     module + "\") is None)'")
             .exit_code == 0;
}

int free_port() {
  int port = 0;
  ::close(dist::listen_on("127.0.0.1", 0, &port));
  return port;
}

}  // namespace trafo::testing
