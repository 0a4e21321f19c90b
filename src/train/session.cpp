#include "session.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/decode/precision_probe.h"
#include "trafo/errors.h"
#include "trafo/run_config/config_file.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/trainer.h"
#include "trafo/util/device.h"
#include "trafo/util/files.h"

namespace trafo::train {
using run_config::TrainConfig;
using run_config::to_toml;
using run_config::DataFiles;
using run_config::data_files;
using run_config::was_given;
using run_config::parse_duration;
namespace {

double checked_max_time_s(const TrainConfig& c) {
  validate(c);
  return parse_duration(c.max_time);
}

// With --threads 0 in a single process, the run follows the load of the machine (util::threads_for_load).
std::optional<util::LoadMeter> make_load_meter(const TrainConfig& c, const dist::Environment& environment) {
  if (c.threads != 0 || environment.local_world_size > 1 || environment.distributed()) return std::nullopt;
  return util::LoadMeter();
}

// Sets and returns this process's threads: ranks on one machine share its cores (--nproc always;
// under torchrun when --threads is left at 0); a single process with --threads 0 takes the cores
// other processes leave free, looked at for 0.1 s.
int use_threads(const TrainConfig& c, const dist::Environment& environment, std::optional<util::LoadMeter>& load,
                double& busy_others) {
  int threads = util::resolve_threads(c.threads);
  if (environment.local_world_size > 1 && (environment.launched || c.threads == 0)) {
    threads = std::max(1, threads / environment.local_world_size);
  }
  if (load) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    busy_others = load->busy_cores();
    threads = util::threads_for_load(threads, busy_others);
  }
  at::set_num_threads(threads);
  return threads;
}

c10::Device pick_device(const TrainConfig& c, const dist::Environment& environment) {
  auto device = util::resolve_device(c.device);
  if (device.is_cuda() && environment.distributed()) device = torch::Device(torch::kCUDA, environment.local_rank);
  return device;
}

std::chrono::milliseconds timeout(const TrainConfig& c) {
  return std::chrono::milliseconds(static_cast<int64_t>(c.dist_timeout * 1000.0));
}

// Rank 0 speaks for the job and owns the folder's lock.
RunFolder open_folder(const TrainConfig& c, const Replicas& replicas) {
  if (!replicas.is_main()) spdlog::set_level(spdlog::level::warn);
  return RunFolder(c.run_dir, /*lock=*/replicas.is_main());
}

// Rank 0 decides which checkpoint (if any) the run resumes from; its model must be the one asked for.
// A new run with --init-from starts from that checkpoint instead (every rank loads it). Either way
// the model trains with the --dropout settled for this session, not the checkpoint's.
ResumePoint choose_resume(TrainConfig& c, const RunFolder& folder, Replicas& replicas) {
  ResumePoint resume;
  if (replicas.is_main()) {
    const bool has_run = !folder.checkpoints().empty();
    if (has_run && c.no_resume && !c.overwrite) {
      throw InputError("run folder " + folder.path().string() +
                       " already holds a run: drop --no-resume to continue it, or add --overwrite to start over");
    }
    resume.replaces_old_run = has_run && c.no_resume;
    if (!c.no_resume) {
      check_resume_request(c);
      resume.saved = newest_complete_checkpoint(folder, c, resume.path);
    }
  }
  resume.path = replicas.share("resume", resume.path.string());
  if (resume.path.empty() && !c.init_from.empty()) {
    resume.initial = checkpoint::load(c.init_from, /*with_training_state=*/false);
    resume.initial->model_config.dropout = c.model.dropout;
    return resume;
  }
  if (resume.path.empty()) return resume;
  if (!c.init_from.empty() && was_given(c, "init-from")) {
    spdlog::info("{} holds a run started from {}: resuming it (--init-from starts new runs only)",
                 folder.path().string(), c.init_from);
  }
  if (!resume.saved) resume.saved = checkpoint::load(resume.path);
  resume.saved->model_config.dropout = c.model.dropout;
  c.model.vocab_size = resume.saved->model_config.vocab_size;  // the checkpoint's tokenizer is kept
  return resume;
}

// The checkpoint's tokenizer, or a new one that rank 0 learns (or finds in the cache) and the other
// ranks receive. Its size is the model's vocabulary: a small corpus may give fewer pieces than asked for.
data::Tokenizer make_tokenizer(TrainConfig& c, int threads, const DataFiles& paths, const std::vector<int64_t>& lines,
                               const std::filesystem::path& cache, const ResumePoint& resume, Replicas& replicas) {
  c.vocab.threads = threads;
  c.vocab.reserved = corpus_tags(paths);
  std::string bytes = resume.saved ? resume.saved->tokenizer : resume.initial ? resume.initial->tokenizer : "";
  if (!resume.saved && !resume.initial) {
    if (replicas.is_main()) bytes = learn_vocabulary(c, paths, lines, cache);
    bytes = replicas.share("tokenizer", bytes);
  }
  auto tokenizer = data::Tokenizer::from_bytes(bytes);
  c.model.vocab_size = tokenizer.vocab_size();
  return tokenizer;
}

// Validation decodes and scores in the precision `trafo eval --precision P` picks for this model on the
// same machine (auto times its decoding steps): in-training figures equal a fresh eval's.
runtime::Precision pick_validation_precision(const TrainConfig& c, model::Transformer& model, bool main_rank) {
  if (!main_rank) return runtime::Precision{};
  return runtime::pick_decoding_precision(c.precision, model->parameters().front().device(),
                                 [&] { return decode::bf16_decoding_speedup(model); }, /*quiet=*/true);
}

std::optional<Validator> make_validator(const TrainConfig& c, const DataFiles& paths, const data::Tokenizer& tokenizer,
                                        bool main_rank, bool bf16) {
  if (!main_rank) return std::nullopt;
  return Validator(paths.dev_src, paths.dev_tgt, tokenizer, c.batch_tokens, c.valid_max_sentences, c.valid_samples,
                   c.model.max_positions, bf16, c.valid_tag.empty() ? -1 : tokenizer.reserved_id(c.valid_tag));
}

// In training mode on `device`, with rank 0's weights on every rank. The seed is set first: it
// draws a new run's weights (a resumed run's generator is restored from its checkpoint after).
// A checkpoint saved with --ema holds the average as its weights: training goes on from the raw ones.
model::Transformer make_model(const TrainConfig& c, const ResumePoint& resume, const c10::Device& device,
                              Replicas& replicas) {
  torch::manual_seed(c.seed);
  model::Transformer model = resume.saved     ? checkpoint::make_model(*resume.saved, device)
                             : resume.initial ? checkpoint::make_model(*resume.initial, device)
                                              : model::Transformer(c.model);
  model->to(device);
  if (resume.saved) {
    const auto raw = raw_weights(*resume.saved->training);
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      const auto found = raw.find(p.key());
      if (found != raw.end()) p.value().copy_(found->second);
    }
    if (!raw.empty() && c.ema == 0) {
      spdlog::info("{} was saved with --ema: training goes on from its raw weights, without a moving average",
                   resume.path.string());
    }
  }
  model->train();
  replicas.replicate(model->parameters());
  return model;
}

// Rank 0's moving average with --ema: a resumed run's is its checkpoint's weights; a checkpoint saved
// without one starts it from the weights as they are.
std::optional<WeightAverage> make_average(const TrainConfig& c, const ResumePoint& resume,
                                          const model::Transformer& model, bool main_rank) {
  if (c.ema == 0 || !main_rank) return std::nullopt;
  std::optional<WeightAverage> average(std::in_place, *model, c.ema);
  if (!resume.saved) return average;
  if (raw_weights(*resume.saved->training).empty()) {
    spdlog::info("{} was saved without --ema: the moving average starts from its weights", resume.path.string());
  } else {
    average->load(resume.saved->weights);
  }
  return average;
}

// Restores the optimizer's state and the random generator of a resumed run, then lets its checkpoint go.
Progress restore_progress(ResumePoint& resume, torch::optim::Optimizer& optimizer, const model::Transformer& model) {
  Progress progress;
  try {
    if (resume.saved) progress = unpack_training_state(*resume.saved->training, optimizer, named_parameters(*model));
  } catch (const InputError& e) {
    throw InputError("cannot resume from " + resume.path.string() + ": " + e.what());
  }
  resume.saved.reset();
  resume.initial.reset();
  if (!resume.path.empty()) spdlog::info("resuming from {}", resume.path.string());
  return progress;
}

// Everything is read and checked: only now may a new run replace an old one.
std::optional<LogFileCopy> open_log_file(const RunFolder& folder, const ResumePoint& resume, bool main_rank) {
  if (resume.replaces_old_run) folder.replace_old_run();
  if (!main_rank) return std::nullopt;
  return std::optional<LogFileCopy>(std::in_place, folder.log());
}

data::BatcherOptions batcher_options(const TrainConfig& c, const Replicas& replicas) {
  data::BatcherOptions options;
  options.batch_tokens = c.batch_tokens;
  options.seed = c.seed;
  options.shard = replicas.rank();
  options.shards = replicas.size();
  return options;
}

}  // namespace

void check_before_launch(TrainConfig& c) {
  settle_options(c);
  validate(c);
  check_data(data_files(c), cache_folder(c));
  check_resume_request(c);
}

Session::Session(TrainConfig& c)
    : config(c),
      config_text(to_toml(settle_options(c))),
      started(Clock::now()),
      max_time_s(checked_max_time_s(c)),
      environment(dist::read_environment()),
      cache(cache_folder(c)),
      paths(data_files(c)),
      train_lines(check_data(paths, cache)),
      load(make_load_meter(c, environment)),
      threads(use_threads(c, environment, load, busy_at_start)),
      device(pick_device(c, environment)),
      precision(runtime::pick_precision(c.precision, device, "training")),
      replicas(environment, device, timeout(c)),
      folder(open_folder(c, replicas)),
      resume(choose_resume(c, folder, replicas)),
      tokenizer(make_tokenizer(c, threads, paths, train_lines, cache, resume, replicas)),
      tags(tag_ids(paths, tokenizer)),
      corpora(load_corpora(c, paths, tokenizer, tags, cache, threads, replicas)),
      model(make_model(c, resume, device, replicas)),
      decoding_precision(pick_validation_precision(c, model, main_rank())),
      validator(make_validator(c, paths, tokenizer, main_rank(), decoding_precision.bf16)),
      average(make_average(c, resume, model, main_rank())),
      optimizer(make_optimizer(c.optimizer, model->parameters(), c.lr, c.adam_beta1, c.adam_beta2, c.adam_eps,
                               c.weight_decay)),
      progress(restore_progress(resume, *optimizer, model)),
      elapsed_before(progress.elapsed_s),
      log_file(open_log_file(folder, resume, main_rank())),
      batcher(make_batcher(corpora, paths, batcher_options(c, replicas), progress.data)) {
  if (batcher.skipped_too_long() > 0) {
    spdlog::warn("{} training pairs are longer than --batch-tokens {} alone and are skipped",
                 batcher.skipped_too_long(), c.batch_tokens);
  }
  if (main_rank()) metrics.emplace(folder.metrics());
  if (main_rank() && c.tensorboard) tensorboard.emplace(folder.path() / "tensorboard");
  if (main_rank() && !resumed()) util::write_file_atomically(folder.config(), config_text);
  if (main_rank()) leaks = find_leaks(paths, tokenizer, corpora);
}

int64_t Session::train_pairs() const {
  int64_t pairs = 0;
  for (const auto& corpus : corpora) pairs += corpus.corpus.size();
  return pairs;
}

double Session::elapsed() const {
  return elapsed_before + std::chrono::duration<double>(Clock::now() - started).count();
}

checkpoint::Checkpoint Session::make_checkpoint() {
  checkpoint::Checkpoint ckpt;
  ckpt.model_config = config.model;
  ckpt.weights = checkpoint::model_weights(model);
  ckpt.tokenizer = tokenizer.to_bytes();
  ckpt.config = config_text;
  ckpt.inference.src_lang = config.src_lang;
  ckpt.inference.tgt_lang = config.tgt_lang;
  for (const auto& corpus : paths.train) {
    const auto& tags = ckpt.inference.tags;
    if (!corpus.tag.empty() && std::find(tags.begin(), tags.end(), corpus.tag) == tags.end()) {
      ckpt.inference.tags.push_back(corpus.tag);
    }
  }
  progress.elapsed_s = elapsed();
  ckpt.training = pack_training_state(progress, *optimizer, named_parameters(*model));
  if (average) store_average(*average, ckpt);
  return ckpt;
}

}  // namespace trafo::train
