// trafo train: binds TrainConfig to the command line and to TOML config files.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "config_options.h"
#include "trafo/dist/environment.h"
#include "trafo/errors.h"
#include "trafo/run_config/config_file.h"
#include "trafo/train/trainer.h"
#include "trafo/util/numbers.h"

namespace trafo::cli {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int signal_number) {
  stop_requested.store(true);
  std::signal(signal_number, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// "SRC,TGT[,WEIGHT[,TAG[,ALIGNMENT[,SRC_LANG,TGT_LANG]]]]" of --corpus.
run_config::CorpusSpec parse_corpus(const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    fields.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (fields.size() < 2 || fields.size() == 6 || fields.size() > 7 || fields[0].empty() || fields[1].empty()) {
    throw CLI::ValidationError("--corpus", "'" + text + "' is not SRC,TGT[,WEIGHT[,TAG[,ALIGNMENT[,SRC_LANG,TGT_LANG]]]]");
  }
  run_config::CorpusSpec corpus;
  corpus.src = fields[0];
  corpus.tgt = fields[1];
  if (fields.size() > 2 && !fields[2].empty()) {
    try {
      util::parse_finite(fields[2], corpus.weight);
    } catch (const InputError& e) {
      throw CLI::ValidationError("--corpus", "weight '" + fields[2] + "': " + e.what());
    }
  }
  if (fields.size() > 3) corpus.tag = fields[3];
  if (fields.size() > 4) corpus.alignment = fields[4];
  if (fields.size() > 6) {
    corpus.src_lang = fields[5];
    corpus.tgt_lang = fields[6];
  }
  return corpus;
}

}  // namespace

TrainOptions bind_train_options(CLI::App& cmd) {
  TrainOptions bound{std::make_shared<run_config::TrainConfig>(), std::make_shared<std::string>(),
                     std::make_shared<bool>(false)};
  auto config = bound.config;
  cmd.add_option("--config", *bound.config_path, "TOML config file; keys are the long option names, the command line wins");
  cmd.add_flag("--dump-config", *bound.print_config, "print the effective config (TOML) and exit");
  bind_config_keys(cmd, *config);
  cmd.add_option_function<std::vector<std::string>>(
         "--corpus",
         [config](const std::vector<std::string>& texts) {
           config->data.corpora.clear();
           for (const auto& text : texts) config->data.corpora.push_back(parse_corpus(text));
         },
         "a training corpus, SRC,TGT[,WEIGHT[,TAG[,ALIGNMENT[,SRC_LANG,TGT_LANG]]]], repeatable: corpora are sampled "
         "by weight (default 1), a corpus's TAG (e.g. <bt>) goes before each of its source sentences as a reserved "
         "piece, ALIGNMENT is its word alignments for guided alignment (see --guided-alignment), and SRC_LANG,TGT_LANG "
         "its languages (default --src-lang, --tgt-lang): with two or more target languages each corpus's sources "
         "begin with its target's >>xx<< tag; replaces --train-src/--train-tgt (--data-dir then gives the dev set)")
      ->group("Data")
      ->type_name("SRC,TGT[,W[,TAG[,ALIGN[,SL,TL]]]]");
  return bound;
}

bool TrainOptions::settle(const CLI::App& cmd) const {
  // Whether an option was given is a fact of the command line and the config file, never of its
  // value: a given value equal to the default still meets a checkpoint's (run_config::was_given).
  auto given = given_config_keys(cmd);
  if (cmd.count("--corpus") > 0) given.insert("corpus");
  if (cmd.count("--config") > 0) {  // --config "" is an error too
    const auto from_file = run_config::read_config_file(*config_path, *config, given);
    given.insert(from_file.begin(), from_file.end());
  }
  config->given = given;
  if (*print_config) std::cout << run_config::to_toml(*config);
  return !*print_config;
}

void stop_on_signals() {
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
}

const std::atomic<bool>* stop_flag() { return &stop_requested; }

CommandRunner add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train a model on parallel text");
  const auto bound = bind_train_options(*cmd);
  auto config = bound.config;
  return [cmd, bound, config]() -> int {
    if (!bound.settle(*cmd)) return 0;
    if (config->parallel.nproc > 1 && !dist::read_environment().launched) {
      dist::check_local_launch(config->parallel.nproc);
      train::check_before_launch(*config);
      return dist::launch_local(config->parallel.nproc, config->parallel.dist_timeout + 30.0);
    }
    stop_on_signals();
    train::Trainer trainer(*config, &stop_requested);
    log_result(trainer.run());
    return 0;
  };
}

void log_result(const train::TrainResult& result) {
  if (result.reason == "signal") {
    spdlog::info("stopped by signal at step {}; checkpoint saved: {}", result.step, result.last_checkpoint);
  } else {
    spdlog::info("done ({}) at step {}; best checkpoint: {}", result.reason, result.step,
                 result.best_checkpoint.empty() ? result.last_checkpoint : result.best_checkpoint);
  }
}

}  // namespace trafo::cli
