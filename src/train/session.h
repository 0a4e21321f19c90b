// What a training run works with, made before its first step: a small struct of named parts, each made
// by its own function from the parts before it, in the order they are declared (Session's constructor).
// The options are settled once first (settle_config); the tokenizer gives the model's vocabulary and
// the batch budget is fitted (finalize), and from then on the run's one TrainConfig (`config`) is final
// and no part writes into it. Each automatic choice on the way is a Choice (Session::choices).
// Internal to train/.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/batcher.h"
#include "trafo/data/tokenizer.h"
#include "trafo/dist/environment.h"
#include "trafo/model/transformer.h"
#include "trafo/run_config/options.h"
#include "trafo/train/run_folder.h"
#include "model_state.h"
#include "placement.h"
#include "resume_choice.h"
#include "run_logs.h"
#include "training_data.h"
#include "validation.h"

namespace trafo::train {

// The options of a run as the user gave them, settled (settle_options: a resume's from its config.toml, a new
// run's from --init-from) and checked. The model's vocabulary size is still the one asked for: the
// tokenizer decides it (final_config).
struct SettledConfig {
  run_config::TrainConfig options;
  PresetReport preset;      // the defaults chosen for the options left out (settle_preset)
  std::string text;         // run_config::to_toml(options): checkpoints, config.toml, the `start` record
  double max_time_s = 0.0;  // --max-time in seconds; 0: none
};

// Throws InputError naming the first invalid value, or for a conflict with the run or --init-from.
// `speed` times the built-in defaults where --preset auto weighs a --max-time budget (settle_preset).
SettledConfig settle_config(run_config::TrainConfig given, const run_config::DefaultsSpeed& speed = {});

// Makes `config` final: the tokenizer's size as the model's vocabulary (a small corpus may give fewer
// pieces than asked for, and a resumed or fine-tuned run keeps its checkpoint's tokenizer) and
// `batch_tokens`. Returns true (a Session member made by it).
bool finalize(run_config::TrainConfig& config, const data::Tokenizer& tokenizer, int64_t batch_tokens);

// --batch-tokens for this run (batch_fit.h): a budget given, or set by the preset, is kept; auto, or
// none given on CUDA, is fitted there with one process (kDefaultBatchTokens elsewhere).
FittedBudget choose_batch_tokens(const SettledConfig& settled, const Placement& place, const TrainingData& data);

// The wall-clock time of a run: its earlier sessions' and this one's.
class RunClock {
 public:
  using Clock = std::chrono::steady_clock;
  RunClock(Clock::time_point started, double before_s, double max_time_s)
      : started_(started), before_s_(before_s), max_time_s_(max_time_s) {}
  double elapsed() const { return before_s_ + std::chrono::duration<double>(Clock::now() - started_).count(); }
  double max_time_s() const { return max_time_s_; }  // 0: no limit
  bool out_of_time() const { return max_time_s_ > 0 && elapsed() >= max_time_s_; }

 private:
  Clock::time_point started_;
  double before_s_;
  double max_time_s_;
};

struct Session {
  using Clock = RunClock::Clock;

  // Where a run starts again after --preset auto's second look (pace_check.h): the first start,
  // whose --max-time it finishes in, and why, which replaces the preset's reason.
  struct Again {
    Clock::time_point started;
    std::string why;
  };

  // Throws InputError for a bad configuration, bad data or a run folder that cannot be resumed.
  explicit Session(const run_config::TrainConfig& given, const Again* again = nullptr);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool main_rank() const { return place.main(); }
  bool resumed() const { return !resume.path.empty(); }
  bool fine_tuned() const { return !resumed() && !config.init_from.empty(); }  // a new run from --init-from

  // Every automatic choice of the run, in the order made: the preset and the options it set, the
  // batch budget, the vocabulary's size, the precisions, threads, device and CUDA graphs.
  std::vector<run_config::Choice> choices() const;

  const dist::Environment environment;   // dist::read_environment: a bad one is said before anything else
  // settle_config (its preset may read the data files' line counts). Its options are the run's one
  // TrainConfig, which `config` names once finalize has made it final.
  SettledConfig settled;
  const Clock::time_point started;
  const TrainingFiles files;             // checked before the run does anything (settled only counted lines)
  Placement place;                       // threads, device, precision, replicas
  const RunFolder folder;                // locked by rank 0
  ResumePoint resume;                    // choose_resume; its checkpoints released by `training`
  const TrainingData data;               // tokenizer and corpora
  const FittedBudget budget;             // choose_batch_tokens
  const bool finalized;                  // finalize(settled.options, ...)
  const run_config::TrainConfig& config;  // settled.options, final: what every later part reads
  model::Transformer model;              // make_model: raw weights (a resumed run's from its training state)
  Validation validation;                 // rank 0's
  OptimizerState training;               // optimizer, moving average, progress
  const RunClock clock;                  // from `started` and the run's earlier sessions
  data::Batcher batcher;                 // from where the run stands
  RunLogs logs;                          // replaces an old run, then train.log, metrics, tensorboard, config.toml
  const LeakReport leaks;                // rank 0's; after the note of the pairs too long for a batch
};

// What every checkpoint of the session says of the run beside its weights and training state: the model
// config, the tokenizer, the options as settled, the languages and corpus tags (OptimizerState::checkpoint).
checkpoint::Checkpoint run_description(const Session& session);

// The fields of the `start` record (logging the corpora and, with replicas, the time of an all-reduce of
// the gradients), and the lines logged after it. start_record.cpp
nlohmann::json start_record(Session& session);
void log_start(const Session& session);

}  // namespace trafo::train
