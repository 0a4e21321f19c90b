// Test hooks: the one seam through which tests inject faults and delays (a batch that fails, a
// slow write, a slow cache chunk) and pose hardware (CPU flags, bf16 speed, other load). Production
// code reads test_hooks() and finds every hook off; it reads no test variable of the environment.
// Tests in the same process call set_test_hooks (TestHooksScope restores the hooks they found);
// tests that drive the binary set the one switch, TRAFO_TEST_HOOKS, which main() reads once at start
// (docs/testing.md "Test hooks"). Like errors.h this header belongs to no area: every area may use it.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "trafo/errors.h"

namespace trafo {

struct TestHooks {
  // Poses as a CPU with these flags (only amx_bf16 and avx512_bf16 matter): runtime::cpu_bf16_flags.
  // Off (nullopt): the flags LibTorch's cpuinfo reports.
  std::optional<std::set<std::string>> cpu_flags;
  // bf16 / fp32 speed of the training matmuls (runtime::cpu_bf16_speedup). Off: timed.
  std::optional<double> bf16_speedup;
  // bf16 / fp32 speed of the model's decoding steps (runtime::pick_decoding_precision). Off: timed.
  std::optional<double> bf16_decoding_speedup;
  // Cores that other processes keep busy (util::LoadMeter, util::busy_cores_of_others). Off: measured.
  std::optional<double> other_load;
  // Atomic file writes go in 64 KB pieces with this many ms after each, so that a SIGKILL lands
  // inside a write (util::write_file_atomically; tests/kill_test.cpp). Off: 0, one write.
  int slow_writes_ms = 0;
  // Building batch N of an epoch throws RunError, as a failed allocation would (data::Batcher;
  // tests/batcher_test.cpp). Off: -1.
  int64_t batch_fails_at = -1;
  // Each token-cache chunk written waits this many ms, as on a slow disk, so that a kill lands while
  // the cache is built (data token cache; tests/corpora_cli_test.cpp). Off: 0.
  int cache_chunk_delay_ms = 0;
  // Poses a GPU on which a training batch of at most this many tokens fits: --batch-tokens auto fits
  // the budget against it on the CPU (train::fit_batch_tokens; tests/batch_fit_test.cpp). Off: -1.
  int64_t fit_tokens = -1;
  // Target tokens per second of the built-in defaults' training steps, which --preset auto weighs
  // against a --max-time budget (train::defaults_tokens_per_s; tests/presets_test.cpp). Off: timed.
  std::optional<double> train_tokens_per_s;
  // Epochs per second of the run's own training steps, which --preset auto's second look weighs
  // against what remains of a --max-time budget (train::PaceCheck; tests/presets_test.cpp). Off: measured.
  std::optional<double> run_epochs_per_s;
};

// The environment variable that carries the switch to the binary.
inline constexpr const char* kTestHooksSwitch = "TRAFO_TEST_HOOKS";

namespace detail {
inline TestHooks& test_hooks_storage() {
  static TestHooks hooks;
  return hooks;
}
}  // namespace detail

// The process's hooks: all off unless a test or the switch set them.
inline const TestHooks& test_hooks() { return detail::test_hooks_storage(); }

// Sets the process's hooks. Not synchronized: call it while no other thread reads them (before a
// command starts, between tests).
inline void set_test_hooks(const TestHooks& hooks) { detail::test_hooks_storage() = hooks; }

// Sets `hooks` for its lifetime, then restores the ones it found (tests in the same process).
class TestHooksScope {
 public:
  explicit TestHooksScope(const TestHooks& hooks) : saved_(test_hooks()) { set_test_hooks(hooks); }
  ~TestHooksScope() { set_test_hooks(saved_); }
  TestHooksScope(const TestHooksScope&) = delete;
  TestHooksScope& operator=(const TestHooksScope&) = delete;

 private:
  TestHooks saved_;
};

// Parses the switch: entries KEY=VALUE separated by commas, e.g.
//   batch_fails_at=3,slow_writes_ms=25,cpu_flags=avx2 avx512_bf16,bf16_speedup=4,other_load=1
// Keys: cpu_flags (names separated by spaces or '+'; empty: no flags), bf16_speedup,
// bf16_decoding_speedup, train_tokens_per_s, run_epochs_per_s (> 0), other_load (>= 0), slow_writes_ms,
// cache_chunk_delay_ms, batch_fails_at, fit_tokens (integers >= 0). Empty text: every hook off.
// Throws InputError naming the switch.
inline TestHooks test_hooks_from_switch(const std::string& text) {
  TestHooks hooks;
  const auto fail = [](const std::string& why) -> void {
    throw InputError(std::string(kTestHooksSwitch) + ": " + why);
  };
  const auto trim = [](std::string s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return std::string();
    return s.substr(first, s.find_last_not_of(" \t") - first + 1);
  };
  // A finite number >= 0 (> 0 where `above`).
  const auto number = [&](const std::string& key, const std::string& value, bool above) {
    errno = 0;
    char* end = nullptr;
    const double parsed = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || errno != 0 || !std::isfinite(parsed) ||
        (above ? parsed <= 0 : parsed < 0)) {
      fail(key + "=" + value + (above ? ": expected a number > 0" : ": expected a number >= 0"));
    }
    return parsed;
  };
  const auto whole = [&](const std::string& key, const std::string& value) {
    const bool digits = !value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) fail(key + "=" + value + ": expected a whole number >= 0");
    return std::stoll(value);
  };
  std::istringstream entries(text);
  for (std::string entry; std::getline(entries, entry, ',');) {
    entry = trim(entry);
    if (entry.empty()) continue;
    const auto equals = entry.find('=');
    if (equals == std::string::npos) fail("'" + entry + "' is not KEY=VALUE");
    const std::string key = trim(entry.substr(0, equals)), value = trim(entry.substr(equals + 1));
    if (key == "cpu_flags") {
      std::string names = value;
      for (auto& c : names) c = c == '+' ? ' ' : c;
      std::istringstream words(names);
      std::set<std::string> flags;
      for (std::string word; words >> word;) flags.insert(word);
      hooks.cpu_flags = flags;
    } else if (key == "bf16_speedup") {
      hooks.bf16_speedup = number(key, value, true);
    } else if (key == "bf16_decoding_speedup") {
      hooks.bf16_decoding_speedup = number(key, value, true);
    } else if (key == "other_load") {
      hooks.other_load = number(key, value, false);
    } else if (key == "slow_writes_ms") {
      hooks.slow_writes_ms = static_cast<int>(whole(key, value));
    } else if (key == "cache_chunk_delay_ms") {
      hooks.cache_chunk_delay_ms = static_cast<int>(whole(key, value));
    } else if (key == "batch_fails_at") {
      hooks.batch_fails_at = whole(key, value);
    } else if (key == "fit_tokens") {
      hooks.fit_tokens = whole(key, value);
    } else if (key == "train_tokens_per_s") {
      hooks.train_tokens_per_s = number(key, value, true);
    } else if (key == "run_epochs_per_s") {
      hooks.run_epochs_per_s = number(key, value, true);
    } else {
      fail("unknown hook '" + key + "' (known: cpu_flags, bf16_speedup, bf16_decoding_speedup, other_load, "
           "slow_writes_ms, cache_chunk_delay_ms, batch_fails_at, fit_tokens, train_tokens_per_s, run_epochs_per_s)");
    }
  }
  return hooks;
}

// What main() calls once at start: the hooks the switch in the environment gives, if it is set.
// Throws InputError for a bad switch.
inline void set_test_hooks_from_environment() {
  if (const char* text = std::getenv(kTestHooksSwitch)) set_test_hooks(test_hooks_from_switch(text));
}

}  // namespace trafo
