// Shared by the libFuzzer harnesses: what counts as an expected outcome, scratch files,
// and the small tokenizer and model that several harnesses need.
//
// Expected: trafo::InputError or trafo::RunError (bad input, reported as one line, exit 2/1).
// A finding: any other exception escaping, a crash, a sanitizer report, a hang, a huge
// allocation, or a broken invariant (check() below).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include <cxxabi.h>

#include "trafo/errors.h"

namespace trafo::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "==trafo-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();  // libFuzzer saves the input as crash-<sha1>
}

inline void check(bool condition, const std::string& what) {
  if (!condition) finding("broken invariant: " + what);
}

inline std::string type_name(const std::exception& e) {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string result = status == 0 && name ? name : typeid(e).name();
  std::free(name);
  return result;
}

// Runs `body`; trafo::InputError / trafo::RunError are the expected answer to bad input and
// return false; anything else escaping is a finding. True when `body` returned normally.
template <class Body>
bool expect_trafo_errors(const char* step, Body&& body) {
  try {
    body();
    return true;
  } catch (const InputError&) {
    return false;
  } catch (const RunError&) {
    return false;
  } catch (const std::exception& e) {
    std::string message = e.what();
    message = message.substr(0, message.find('\n'));  // c10::Error appends a backtrace
    finding(std::string(step) + ": unexpected " + type_name(e) + ": " + message);
  } catch (...) {
    finding(std::string(step) + ": an exception that is not a std::exception");
  }
}

// A private scratch folder for the process (in /dev/shm when there is one), removed at exit.
const std::filesystem::path& scratch_dir();

// Writes `bytes` to scratch_dir()/name and returns the path.
std::filesystem::path write_scratch(const std::string& name, std::string_view bytes);

// The bytes before the first `separator` and those after it (all of it and nothing without one).
std::pair<std::string_view, std::string_view> split_once(std::string_view data, char separator);

// Lines of `text` split at '\n' only; a last line without '\n' counts, as in trafo's readers.
std::vector<std::string> split_lines(std::string_view text);

}  // namespace trafo::fuzz
