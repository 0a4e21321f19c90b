// What a training run works with, made before its first step in the order of the members below:
// the configuration and data checked, this process placed (threads, device, replicas), the run
// folder locked, the checkpoint to resume chosen, then tokenizer, data, model, optimizer, where
// the run stands, and the logs. Internal to train/.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <torch/optim/optimizer.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/dist/environment.h"
#include "trafo/model/transformer.h"
#include "trafo/train/ema.h"
#include "trafo/runtime/precision.h"
#include "trafo/train/tensorboard.h"
#include "trafo/train/metrics_log.h"
#include "trafo/run_config/options.h"
#include "trafo/train/run_folder.h"
#include "trafo/run_config/run_identity.h"
#include "trafo/train/training_state.h"
#include "trafo/train/validator.h"
#include "trafo/util/device.h"
#include "log_file_copy.h"
#include "replicas.h"
#include "resume_choice.h"
#include "training_data.h"

namespace trafo::train {

// The checkpoint a run continues from, as rank 0 chose it; every rank loads it.
struct ResumePoint {
  std::filesystem::path path;                   // empty: a new run
  std::optional<checkpoint::Checkpoint> saved;  // released once model and optimizer hold it
  bool replaces_old_run = false;                // --no-resume --overwrite over a folder that holds a run
  std::optional<checkpoint::Checkpoint> initial;  // a new run's --init-from checkpoint, released as `saved`
};

struct Session {
  using Clock = std::chrono::steady_clock;

  // Throws InputError for a bad configuration, bad data or a run folder that cannot be resumed.
  // `config` gets the vocabulary size of the tokenizer and the threads this process uses.
  explicit Session(run_config::TrainConfig& config);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool main_rank() const { return replicas.is_main(); }
  bool resumed() const { return !resume.path.empty(); }
  bool fine_tuned() const { return !resumed() && !config.init_from.empty(); }  // a new run from --init-from
  double elapsed() const;  // seconds of all sessions of the run
  // The model, tokenizer, configuration and training state as they are now (progress.elapsed_s updated);
  // with --ema, the weights are the average's and the raw ones are in the training state.
  checkpoint::Checkpoint make_checkpoint();

  run_config::TrainConfig& config;
  const std::string config_text;            // run_config::to_toml(config) as given: checkpoints, config.toml, `start`
  const Clock::time_point started;
  const double max_time_s;                   // --max-time in seconds; 0: none
  const dist::Environment environment;
  const std::filesystem::path cache;          // token caches and vocabularies (--cache-dir)
  const run_config::DataFiles paths;
  const std::vector<int64_t> train_lines;     // line pairs of each corpus
  std::optional<util::LoadMeter> load;       // with --threads 0 alone: the machine's load, followed
  double busy_at_start = 0.0;                // cores other processes kept busy at start (with `load`)
  int threads;                               // this process's, now
  const c10::Device device;
  const runtime::Precision precision;                 // --precision resolved for `device`
  Replicas replicas;
  const RunFolder folder;                    // locked by rank 0
  ResumePoint resume;
  const data::Tokenizer tokenizer;
  const std::vector<int> tags;               // each corpus's tag piece (-1: none)
  const std::vector<data::CachedCorpus> corpora;  // mapped from their token caches, as paths.train
  model::Transformer model;                  // raw weights (a resumed run's from its training state)
  const runtime::Precision decoding_precision;        // validation's: --precision resolved as `trafo eval` does (rank 0)
  std::optional<Validator> validator;        // rank 0's
  std::optional<WeightAverage> average;      // rank 0's, with --ema
  const std::unique_ptr<torch::optim::Optimizer> optimizer;
  Progress progress;
  const double elapsed_before;               // by the run's earlier sessions
  const std::optional<LogFileCopy> log_file;  // rank 0's
  data::Batcher batcher;
  std::optional<MetricsLog> metrics;         // rank 0's
  std::optional<TensorBoardWriter> tensorboard;  // rank 0's, with --tensorboard
  LeakReport leaks;                          // rank 0's

  int64_t train_pairs() const;               // of all corpora
};

}  // namespace trafo::train
