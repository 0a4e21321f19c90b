// trafo train: binds TrainConfig to the command line and to TOML config files.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "config_file.h"
#include "model_options.h"
#include "trafo/dist/environment.h"
#include "trafo/errors.h"
#include "trafo/train/trainer.h"

namespace trafo::cli {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int signal_number) {
  stop_requested.store(true);
  std::signal(signal_number, SIG_DFL);  // a second Ctrl-C ends the process at once
}

void add_options(CLI::App& cmd, train::TrainConfig& c) {
  auto& m = c.model;
  cmd.add_option("--data-dir", c.data_dir, "folder holding train.SRC, train.TGT, dev.SRC, dev.TGT")->group("Data");
  cmd.add_option("--src-lang", c.src_lang, "source language suffix")->capture_default_str()->group("Data");
  cmd.add_option("--tgt-lang", c.tgt_lang, "target language suffix")->capture_default_str()->group("Data");
  cmd.add_option("--train-src", c.train_src, "training source file (instead of --data-dir)")->group("Data");
  cmd.add_option("--train-tgt", c.train_tgt, "training target file")->group("Data");
  cmd.add_option("--dev-src", c.dev_src, "dev source file")->group("Data");
  cmd.add_option("--dev-tgt", c.dev_tgt, "dev target file")->group("Data");
  cmd.add_option("--max-length", c.max_length, "skip pairs longer than this many pieces (0: no limit)")
      ->capture_default_str()->group("Data");
  cmd.add_option("--max-length-ratio", c.max_length_ratio, "skip pairs whose length ratio exceeds this (0: off)")
      ->capture_default_str()->group("Data");

  cmd.add_option("--vocab-size", c.vocab.vocab_size, "joint SentencePiece vocabulary size")->capture_default_str()->group("Vocabulary");
  cmd.add_option("--vocab-type", c.vocab.model_type, "unigram or bpe")->capture_default_str()->group("Vocabulary");
  cmd.add_option("--vocab-normalization", c.vocab.normalization,
                 "SentencePiece normalisation rule (default nmt_nfkc: NFKC plus whitespace clean-up)")
      ->capture_default_str()->group("Vocabulary");
  cmd.add_option("--vocab-character-coverage", c.vocab.character_coverage, "share of characters given own pieces")
      ->capture_default_str()->group("Vocabulary");

  add_model_options(cmd, m);

  cmd.add_option("--optimizer", c.optimizer, "adam or adamw")->capture_default_str()->group("Optimisation");
  cmd.add_option("--lr", c.lr, "peak learning rate")->capture_default_str()->group("Optimisation");
  cmd.add_option("--warmup-steps", c.warmup_steps, "linear warmup steps, then inverse square root decay")
      ->capture_default_str()->group("Optimisation");
  cmd.add_option("--adam-beta1", c.adam_beta1, "Adam beta1")->capture_default_str()->group("Optimisation");
  cmd.add_option("--adam-beta2", c.adam_beta2, "Adam beta2")->capture_default_str()->group("Optimisation");
  cmd.add_option("--adam-eps", c.adam_eps, "Adam epsilon")->capture_default_str()->group("Optimisation");
  cmd.add_option("--weight-decay", c.weight_decay, "weight decay")->capture_default_str()->group("Optimisation");
  cmd.add_option("--clip-norm", c.clip_norm, "gradient norm clip (0: off)")->capture_default_str()->group("Optimisation");
  cmd.add_option("--label-smoothing", c.label_smoothing, "label smoothing")->capture_default_str()->group("Optimisation");
  cmd.add_option("--batch-tokens", c.batch_tokens,
                 "token budget per batch, padding included; with several ranks, of the global batch they share")
      ->capture_default_str()->group("Optimisation");
  cmd.add_option("--accumulate", c.accumulate, "batches per update")->capture_default_str()->group("Optimisation");

  cmd.add_option("--max-steps", c.max_steps, "stop after this many updates (0: no limit)")->capture_default_str()->group("Stopping");
  cmd.add_option("--max-epochs", c.max_epochs, "stop after this many epochs (0: no limit)")->capture_default_str()->group("Stopping");
  cmd.add_option("--max-time", c.max_time, "wall-clock budget, e.g. 90s, 20m, 1h30m")->group("Stopping");
  cmd.add_option("--early-stopping", c.early_stopping, "stop after this many validations without improvement (0: off)")
      ->capture_default_str()->group("Stopping");
  cmd.add_option("--early-stopping-metric", c.early_stopping_metric, "bleu, chrf or loss")
      ->capture_default_str()->group("Stopping");

  cmd.add_option("--valid-every", c.valid_every, "steps between validations")->capture_default_str()->group("Run");
  cmd.add_option("--valid-max-sentences", c.valid_max_sentences, "dev sentences decoded per validation (0: all)")
      ->capture_default_str()->group("Run");
  cmd.add_option("--valid-samples", c.valid_samples, "sample translations logged per validation")
      ->capture_default_str()->group("Run");
  cmd.add_option("--checkpoint-every", c.checkpoint_every, "steps between numbered checkpoints (0: at validations)")
      ->capture_default_str()->group("Run");
  cmd.add_option("--keep-checkpoints", c.keep_checkpoints, "numbered checkpoints kept")->capture_default_str()->group("Run");
  cmd.add_option("--log-every", c.log_every, "steps between progress lines")->capture_default_str()->group("Run");
  cmd.add_flag("--tensorboard", c.tensorboard,
               "also write TensorBoard event files (the train/* and valid/* scalars of metrics.jsonl) under "
               "RUN_DIR/tensorboard")
      ->group("Run");
  cmd.add_option("--run-dir", c.run_dir, "run folder (resumed when it holds checkpoint-last.pt)")
      ->capture_default_str()->group("Run");
  cmd.add_flag("--no-resume", c.no_resume, "start over even if the run folder holds a run")->group("Run");
  cmd.add_flag("--overwrite", c.overwrite, "with --no-resume: replace the run folder's run")->group("Run");

  cmd.add_option("--device", c.device, "cpu, cuda or auto")->capture_default_str()->group("Machine");
  cmd.add_option("--threads", c.threads, "intra-op threads (0: all cores)")->capture_default_str()->group("Machine");
  cmd.add_option("--precision", c.precision, "fp32 or bf16 (autocast, fp32 master weights)")
      ->capture_default_str()->group("Machine");
  cmd.add_option("--seed", c.seed, "random seed")->capture_default_str()->group("Machine");

  cmd.add_option("--nproc", c.nproc,
                 "data-parallel processes to start on this machine (Gloo on CPU, NCCL on CUDA); --threads is "
                 "split among them. Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) leave it at 1")
      ->capture_default_str()->group("Data parallel");
  cmd.add_option("--dist-timeout", c.dist_timeout, "seconds a rank waits for the others before the run fails")
      ->capture_default_str()->group("Data parallel");
}

}  // namespace

CommandRunner add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train a model on parallel text");
  auto config = std::make_shared<train::TrainConfig>();
  auto config_path = std::make_shared<std::string>();
  auto print_config = std::make_shared<bool>(false);
  cmd->add_option("--config", *config_path, "TOML config file; keys are the long option names, the command line wins");
  cmd->add_flag("--dump-config", *print_config, "print the effective config (TOML) and exit");
  add_options(*cmd, *config);
  add_number_checks(*cmd);
  return [cmd, config, config_path, print_config]() -> int {
    if (cmd->count("--config") > 0) apply_config_file(*cmd, *config_path);  // --config "" is an error too
    const std::string text = dump_config(*cmd);
    if (*print_config) {
      std::cout << text;
      return 0;
    }
    if (config->nproc > 1 && !dist::read_environment().launched) {
      train::validate(*config);
      return dist::launch_local(config->nproc, config->dist_timeout + 30.0);
    }
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    train::Trainer trainer(*config, text, &stop_requested);
    const auto result = trainer.run();
    if (result.reason == "signal") {
      spdlog::info("stopped by signal at step {}; checkpoint saved: {}", result.step, result.last_checkpoint);
    } else {
      spdlog::info("done ({}) at step {}; best checkpoint: {}", result.reason, result.step,
                   result.best_checkpoint.empty() ? result.last_checkpoint : result.best_checkpoint);
    }
    return 0;
  };
}

}  // namespace trafo::cli
