// trafo: train, evaluate and use transformer translation models from the command line.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <c10/util/Exception.h>
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "config_options.h"
#include "trafo/errors.h"
#include "trafo/ops/eligibility.h"
#include "trafo/test_hooks.h"

namespace {

// One line on stderr, whatever the message holds: line breaks and other control characters become
// spaces (a reason after a line break is kept, not cut off), and a message with nothing after its
// last colon says so instead of ending in ": ".
int fail(int code, const std::string& message) {
  std::string line;
  for (const char c : message) {
    const bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    if (!control) {
      line += c;
    } else if (!line.empty() && line.back() != ' ') {
      line += ' ';
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (line.size() > 2000) line = line.substr(0, 2000) + " ...";
  if (line.empty() || line.back() == ':') line += line.empty() ? "failed, and gave no reason" : " no reason given";
  std::fprintf(stderr, "trafo: error: %s\n", line.c_str());
  return code;
}

// A command's results went to standard output: a full disk or a closed pipe there is a failure,
// not a success with nothing written (`trafo train --dump-config > /dev/full`).
int finish(int code) {
  std::cout.flush();
  const bool written = static_cast<bool>(std::cout) && std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
  if (code == 0 && !written) return fail(1, "cannot write the results to standard output");
  return code;
}

}  // namespace

// jemalloc's options, read by the allocator when the process starts (where the binary links it,
// CMakeLists.txt): freed pages are kept for the next step instead of being purged on a timer. With
// jemalloc's 10-second decay, training re-faulted its activations and ran 22% slower (default model,
// fp32, `trafo bench`, AMD EPYC Zen 5); kept, it runs as fast as with glibc and its memory stays flat.
extern "C" {
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}

int main(int argc, char** argv) {
  // The binary allocates with jemalloc (CMakeLists.txt); these settings apply where it is built
  // without (sanitizer builds): keep freed tensor memory for reuse instead of handing it back to the
  // kernel, since with glibc's defaults every training step's activations are mapped, faulted in
  // and zeroed again (5% of a step here). Blocks of 32 MB and more are still mapped on their own.
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  // Logs go to stderr; stdout carries results only.
  spdlog::set_default_logger(spdlog::stderr_color_mt("trafo"));
  spdlog::set_pattern("[%H:%M:%S] %v");

  CLI::App app{"trafo: a transformer encoder-decoder translation trainer (LibTorch)", "trafo"};
  app.set_version_flag("--version", std::string("trafo ") + TRAFO_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, trafo::cli::CommandRunner>> commands;
  auto add = [&](trafo::cli::CommandRunner (*adder)(CLI::App&)) {
    auto runner = adder(app);
    commands.emplace_back(app.get_subcommands({}).back(), std::move(runner));
  };
  add(trafo::cli::add_train_command);
  add(trafo::cli::add_distill_command);
  add(trafo::cli::add_eval_command);
  add(trafo::cli::add_translate_command);
  add(trafo::cli::add_score_command);
  add(trafo::cli::add_score_pairs_command);
  add(trafo::cli::add_align_command);
  add(trafo::cli::add_toy_corpus_command);
  add(trafo::cli::add_report_command);
  add(trafo::cli::add_attention_command);
  add(trafo::cli::add_bench_command);
  add(trafo::cli::add_average_command);
  add(trafo::cli::add_export_command);
  add(trafo::cli::add_import_command);
  add(trafo::cli::add_serve_command);
  trafo::cli::add_number_checks(app);  // decimal integers, finite floats: every option of every command

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(2, e.what());
  }

  try {
    trafo::set_test_hooks_from_environment();  // the tests' one switch (docs/testing.md "Test hooks"), read once
    trafo::ops::cpu_isa();  // a TRAFO_CPU_KERNELS it cannot take fails here, before any work
    for (auto& [command, runner] : commands) {
      if (command->parsed()) return finish(runner());
    }
    return fail(2, "no subcommand given (see trafo --help)");
  } catch (const trafo::InputError& e) {
    return fail(2, e.what());
  } catch (const trafo::RunError& e) {
    return fail(1, e.what());
  } catch (const CLI::ParseError& e) {  // a config file read after parsing
    return fail(2, e.what());
  } catch (const std::bad_alloc&) {
    return fail(1, "out of memory");
  } catch (const std::filesystem::filesystem_error& e) {
    // The rule every writer follows (trafo::throw_write_error): a path that cannot be looked at or
    // written (too long, no permission, a file where a folder should be) is bad input; a full disk
    // or an I/O error is a failure at run time.
    return fail(trafo::is_run_time_failure(e.code().value()) ? 1 : 2, e.what());
  } catch (const c10::Error& e) {
    // LibTorch's message carries a C++ backtrace.
    return fail(1, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
}
