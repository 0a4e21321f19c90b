#include "trafo/dist/environment.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "trafo/errors.h"

namespace trafo::dist {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int env_int(const char* name, int fallback, int min, int max) {
  const char* text = env(name);
  if (text == nullptr) return fallback;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) {
    throw InputError(std::string("environment variable ") + name + "=" + text + " is not an integer in [" +
                     std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int>(value);
}

}  // namespace

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0;
}

Environment read_environment() {
  Environment e;
  if (env("WORLD_SIZE") == nullptr) {
    if (env("RANK") != nullptr) throw InputError("RANK is set but WORLD_SIZE is not");
    return e;
  }
  constexpr int kMaxRanks = 1 << 20;
  e.world_size = env_int("WORLD_SIZE", 1, 1, kMaxRanks);
  if (e.world_size == 1) return e;
  if (env("RANK") == nullptr) throw InputError("WORLD_SIZE is set but RANK is not");
  e.rank = env_int("RANK", 0, 0, kMaxRanks);
  if (e.rank >= e.world_size) {
    throw InputError("RANK=" + std::to_string(e.rank) + " is not below WORLD_SIZE=" + std::to_string(e.world_size));
  }
  if (env("MASTER_ADDR") == nullptr) throw InputError("WORLD_SIZE is set but MASTER_ADDR is not");
  if (env("MASTER_PORT") == nullptr) throw InputError("WORLD_SIZE is set but MASTER_PORT is not");
  e.master_addr = env("MASTER_ADDR");
  e.master_port = env_int("MASTER_PORT", 0, 1, 65535);
  e.local_rank = env_int("LOCAL_RANK", e.rank, 0, kMaxRanks);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", 1, 1, kMaxRanks);
  const char* use_agent_store = env("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = use_agent_store != nullptr && std::string(use_agent_store) == "True";
  e.store_prefix = "trafo/" + std::to_string(env_int("TORCHELASTIC_RESTART_COUNT", 0, 0, kMaxRanks)) + "/";
  e.listen_fd = env_int("TRAFO_STORE_FD", -1, 0, 1 << 20);
  e.launched = env("TRAFO_LAUNCHED") != nullptr;
  return e;
}

int listen_on(const std::string& address, int port, int* bound_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw RunError(std::string("cannot open a socket: ") + std::strerror(errno));
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (is_loopback(address)) {
    const std::string ip = address == "localhost" ? "127.0.0.1" : address;
    if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
      ::close(fd);
      throw InputError("MASTER_ADDR=" + address + " is not a usable address");
    }
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EADDRINUSE) throw InputError("MASTER_PORT=" + std::to_string(port) + " is already in use");
    throw InputError("cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(error));
  }
  if (bound_port != nullptr) {
    socklen_t length = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
    *bound_port = ntohs(addr.sin_port);
  }
  return fd;
}

namespace {

// The launcher's children, for the signal handler (async-signal-safe: a fixed array).
constexpr int kMaxLocalRanks = 1024;
pid_t children[kMaxLocalRanks];
volatile sig_atomic_t child_count = 0;

extern "C" void pass_signal_on(int signal_number) {
  for (int i = 0; i < child_count; ++i) {
    if (children[i] > 0) ::kill(children[i], signal_number);
  }
}

std::string describe_status(int rank, int status) {
  if (WIFSIGNALED(status)) return "rank " + std::to_string(rank) + " was killed by signal " +
                                  std::to_string(WTERMSIG(status));
  return "rank " + std::to_string(rank) + " exited with code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

void check_local_launch(int nproc) {
  if (nproc < 1 || nproc > kMaxLocalRanks) {
    throw InputError("--nproc must be in [1, " + std::to_string(kMaxLocalRanks) + "], not " + std::to_string(nproc));
  }
  // Each rank is a whole LibTorch process with a thread of its own at least: more ranks than cores
  // only crowd the machine (--nproc 1000 started 1000 processes). Two are allowed anywhere.
  const int cores = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  if (nproc > cores) {
    throw InputError("--nproc " + std::to_string(nproc) + " is more ranks than this machine's " + std::to_string(cores) +
                     " cores");
  }
  if (env("WORLD_SIZE") != nullptr) throw InputError("--nproc cannot be used under torchrun (WORLD_SIZE is set)");
}

int launch_local(int nproc, double grace_s) {
  check_local_launch(nproc);
  int port = 0;
  const int fd = listen_on("127.0.0.1", 0, &port);
  std::vector<std::string> argv_strings;
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  for (std::string argument; std::getline(cmdline, argument, '\0');) argv_strings.push_back(argument);
  if (argv_strings.empty()) throw RunError("cannot read this process's command line from /proc/self/cmdline");
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  struct sigaction action {};
  action.sa_handler = pass_signal_on;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const pid_t parent = ::getpid();
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) throw RunError(std::string("cannot start rank ") + std::to_string(rank) + ": " + std::strerror(errno));
    if (pid == 0) {
      // Own process group: a Ctrl-C reaches the launcher only, which passes it on once.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("TRAFO_LAUNCHED", "1", 1);
      if (rank == 0) {
        ::setenv("TRAFO_STORE_FD", std::to_string(fd).c_str(), 1);
      } else {
        ::close(fd);
      }
      ::execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "trafo: error: cannot start rank %d: %s\n", rank, std::strerror(errno));
      ::_exit(1);
    }
    children[rank] = pid;
    child_count = rank + 1;
  }
  ::close(fd);

  int exit_code = 0;
  int running = nproc;
  std::chrono::steady_clock::time_point deadline{};
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, exit_code == 0 ? 0 : WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    if (pid == 0) {  // a rank failed: the others get `grace_s` to stop on their own
      if (std::chrono::steady_clock::now() >= deadline) {
        for (int i = 0; i < nproc; ++i) {
          if (children[i] > 0) {
            spdlog::error("rank {} did not stop {:.0f} s after the first failure; killing it", i, grace_s);
            ::kill(children[i], SIGKILL);
          }
        }
        deadline = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    int rank = 0;
    while (rank < nproc && children[rank] != pid) ++rank;
    if (rank == nproc) continue;
    children[rank] = 0;
    --running;
    const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed && exit_code == 0) {
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
      if (!WIFEXITED(status)) spdlog::error("{}", describe_status(rank, status));
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000.0));
    }
  }
  child_count = 0;
  return exit_code;
}

}  // namespace trafo::dist
