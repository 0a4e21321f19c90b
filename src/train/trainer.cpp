#include "trafo/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/dist/environment.h"
#include "trafo/errors.h"
#include "trafo/report/tensorboard.h"
#include "trafo/train/autocast.h"
#include "trafo/train/batch_loss.h"
#include "trafo/train/metrics_log.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/progress_line.h"
#include "trafo/train/run_folder.h"
#include "trafo/train/schedule.h"
#include "trafo/train/training_state.h"
#include "trafo/train/validator.h"
#include "trafo/util/device.h"
#include "trafo/util/files.h"
#include "log_file_copy.h"
#include "replicas.h"

namespace trafo::train {
namespace {

constexpr int64_t kMaxSkippedUpdatesInARow = 5;  // DESIGN.md "NaN guard"

struct DataPaths {
  std::string train_src, train_tgt, dev_src, dev_tgt;
};

DataPaths resolve_paths(const TrainConfig& c) {
  auto in_dir = [&](const std::string& split, const std::string& lang) {
    return (std::filesystem::path(c.data_dir) / (split + "." + lang)).string();
  };
  DataPaths p;
  p.train_src = !c.train_src.empty() ? c.train_src : in_dir("train", c.src_lang);
  p.train_tgt = !c.train_tgt.empty() ? c.train_tgt : in_dir("train", c.tgt_lang);
  p.dev_src = !c.dev_src.empty() ? c.dev_src : in_dir("dev", c.src_lang);
  p.dev_tgt = !c.dev_tgt.empty() ? c.dev_tgt : in_dir("dev", c.tgt_lang);
  return p;
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

bool improved(const std::string& metric, double value, const Progress& progress) {
  if (progress.best_step < 0) return true;
  return metric == "loss" ? value < progress.best_metric : value > progress.best_metric;
}

// The newest checkpoint of `folder` that loads whole with its training state; a damaged one is
// passed over with a warning. Empty when the folder holds none. A folder whose checkpoints all fail
// is an error: starting over would write over them.
std::optional<checkpoint::Checkpoint> newest_complete_checkpoint(const RunFolder& folder,
                                                                 std::filesystem::path& found) {
  const auto candidates = folder.checkpoints();
  std::string first_error;
  for (const auto& path : candidates) {
    try {
      auto saved = checkpoint::load(path);
      if (!saved.training) throw InputError(path.string() + " holds no training state to resume from");
      found = path;
      return saved;
    } catch (const InputError& e) {
      spdlog::warn("cannot resume from {}: {}", path.string(), e.what());
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (candidates.empty()) return std::nullopt;
  throw InputError("run folder " + folder.path().string() + " holds checkpoints but none can be resumed (" +
                   first_error + "); use --no-resume --overwrite to start over, or another --run-dir");
}

}  // namespace

Trainer::Trainer(TrainConfig config, std::string config_text, const std::atomic<bool>* stop_requested)
    : config_(std::move(config)), config_text_(std::move(config_text)), stop_requested_(stop_requested) {}

Trainer::~Trainer() = default;

TrainResult Trainer::run() {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  TrainConfig& c = config_;
  validate(c);
  const double max_time_s = parse_duration(c.max_time);
  const auto environment = dist::read_environment();
  const auto paths = resolve_paths(c);
  // Bad input is reported before any work.
  data::check_parallel_files(paths.train_src, paths.train_tgt);
  data::check_parallel_files(paths.dev_src, paths.dev_tgt);

  int threads = util::resolve_threads(c.threads);
  // Ranks on one machine share its cores (--nproc always; under torchrun when --threads is left at 0).
  if (environment.local_world_size > 1 && (environment.launched || c.threads == 0)) {
    threads = std::max(1, threads / environment.local_world_size);
  }
  at::set_num_threads(threads);
  auto device = util::resolve_device(c.device);
  if (device.is_cuda() && environment.distributed()) device = torch::Device(torch::kCUDA, environment.local_rank);
  Replicas replicas(environment, device, std::chrono::milliseconds(static_cast<int64_t>(c.dist_timeout * 1000.0)));
  const bool main_rank = replicas.is_main();
  if (!main_rank) spdlog::set_level(spdlog::level::warn);  // rank 0 speaks for the job

  // Rank 0 owns the folder: its lock, and which checkpoint (if any) the run resumes from.
  const RunFolder folder(c.run_dir, /*lock=*/main_rank);
  std::optional<checkpoint::Checkpoint> saved;
  bool replaces_old_run = false;
  std::filesystem::path resume_path;
  if (main_rank) {
    const bool has_run = !folder.checkpoints().empty();
    if (has_run && c.no_resume && !c.overwrite) {
      throw InputError("run folder " + folder.path().string() +
                       " already holds a run: drop --no-resume to continue it, or add --overwrite to start over");
    }
    replaces_old_run = has_run && c.no_resume;
    if (!c.no_resume) saved = newest_complete_checkpoint(folder, resume_path);
  }
  resume_path = replicas.share("resume", resume_path.string());
  const bool resume = !resume_path.empty();
  if (resume && !saved) saved = checkpoint::load(resume_path);
  if (resume) {
    c.model.vocab_size = saved->model_config.vocab_size;  // the checkpoint's tokenizer is kept
    const auto differences = model::describe_differences(saved->model_config, c.model);
    if (!differences.empty()) {
      throw InputError("cannot resume " + resume_path.string() + ": its model differs (checkpoint vs now: " +
                       differences + "); use another --run-dir or --no-resume --overwrite");
    }
  }
  torch::manual_seed(c.seed);

  c.vocab.threads = threads;
  // A new run's tokenizer is trained by rank 0 alone; the other ranks receive its bytes.
  std::string tokenizer_bytes = saved ? saved->tokenizer : "";
  if (!saved) {
    if (main_rank) tokenizer_bytes = data::Tokenizer::train({paths.train_src, paths.train_tgt}, c.vocab).to_bytes();
    tokenizer_bytes = replicas.share("tokenizer", tokenizer_bytes);
  }
  const auto tokenizer = data::Tokenizer::from_bytes(tokenizer_bytes);
  c.model.vocab_size = tokenizer.vocab_size();  // a small corpus may give fewer pieces than asked for
  // + eos (source) or bos (target) must fit the model's positions, whatever --max-length says.
  const int64_t longest = c.max_length > 0 ? std::min(c.max_length, c.model.max_positions - 1) : c.model.max_positions - 1;
  const auto corpus = data::Corpus::load(paths.train_src, paths.train_tgt, tokenizer,
                                         data::CorpusOptions{longest, c.max_length_ratio});
  std::optional<Validator> validator;
  if (main_rank) {
    validator.emplace(paths.dev_src, paths.dev_tgt, tokenizer, c.batch_tokens, c.valid_max_sentences, c.valid_samples,
                      c.model.max_positions);
  }

  model::Transformer model = saved ? checkpoint::make_model(*saved, device) : model::Transformer(c.model);
  model->to(device);
  model->train();
  replicas.replicate(model->parameters());
  auto optimizer = make_optimizer(c.optimizer, model->parameters(), c.lr, c.adam_beta1, c.adam_beta2, c.adam_eps,
                                  c.weight_decay);
  Progress progress;
  if (saved) progress = unpack_training_state(*saved->training, *optimizer);
  saved.reset();
  if (resume) spdlog::info("resuming from {}", resume_path.string());

  // Everything is read and checked: only now may a new run replace an old one.
  if (replaces_old_run) folder.replace_old_run();
  std::optional<LogFileCopy> log_file;
  if (main_rank) log_file.emplace(folder.log());

  data::BatcherOptions batch_options;
  batch_options.batch_tokens = c.batch_tokens;
  batch_options.seed = c.seed;
  batch_options.shard = replicas.rank();
  batch_options.shards = replicas.size();
  data::Batcher batcher(corpus, batch_options, progress.next_batch);
  if (batcher.skipped_too_long() > 0) {
    spdlog::warn("{} training pairs are longer than --batch-tokens {} alone and are skipped",
                 batcher.skipped_too_long(), c.batch_tokens);
  }

  std::optional<MetricsLog> log;
  if (main_rank) log.emplace(folder.metrics());
  std::optional<report::TensorBoardWriter> tensorboard;
  if (main_rank && c.tensorboard) tensorboard.emplace(folder.path() / "tensorboard");
  // The 1-based epoch of the latest batch, as logs show it.
  int64_t epoch_now = progress.next_batch.index > 0 ? progress.next_batch.epoch + 1
                                                    : std::max<int64_t>(1, progress.next_batch.epoch);
  const double elapsed_before = progress.elapsed_s;
  auto elapsed = [&] { return elapsed_before + std::chrono::duration<double>(Clock::now() - started).count(); };
  auto record = [&](const std::string& event, const nlohmann::json& fields) {
    if (log_file) log_file->check();
    if (log) log->write(event, progress.step, epoch_now, elapsed(), fields);
    if (tensorboard && (event == "train" || event == "valid")) tensorboard->scalars(event, fields, progress.step);
  };
  if (main_rank && !resume) util::write_file_atomically(folder.config(), config_text_);
  nlohmann::json start = {{"config", config_text_}, {"version", TRAFO_VERSION}, {"torch", TORCH_VERSION},
                          {"threads", threads}, {"device", device.str()}, {"world_size", replicas.size()},
                          {"resumed", resume}, {"train_pairs", corpus.size()}, {"vocab_size", tokenizer.vocab_size()},
                          {"parameters", model->parameter_count()}};
  if (replicas.size() > 1) {
    start["gradient_bytes"] = replicas.gradient_bytes();
    start["gradient_allreduce_s"] = replicas.time_gradient_all_reduce();
    spdlog::info("one all-reduce of the gradients ({:.1f} MB): {:.3f} s", replicas.gradient_bytes() / 1e6,
                 start["gradient_allreduce_s"].get<double>());
  }
  record("start", start);
  spdlog::info("{} {} at step {}: {} training pairs, {} batches per epoch, {} parameters, {} threads on {}, {}",
               resume ? "resuming" : "starting", folder.path().string(), progress.step, corpus.size(),
               batcher.batches_per_epoch(), model->parameter_count(), threads, device.str(), replicas.describe());

  auto make_checkpoint = [&] {
    checkpoint::Checkpoint ckpt;
    ckpt.model_config = c.model;
    ckpt.weights = checkpoint::model_weights(model);
    ckpt.tokenizer = tokenizer.to_bytes();
    ckpt.config = config_text_;
    progress.elapsed_s = elapsed();
    ckpt.training = pack_training_state(progress, *optimizer);
    return ckpt;
  };
  auto save = [&](const checkpoint::Checkpoint& ckpt, const std::filesystem::path& path, bool best) {
    checkpoint::save(path, ckpt);
    record("checkpoint", {{"path", path.string()}, {"best", best}});
  };

  ProgressLine line(c, batcher.batches_per_epoch(), max_time_s);
  std::string reason;
  int64_t skipped_in_a_row = 0, skipped_total = 0, last_validated = -1;
  double window_loss = 0.0, window_communication_s = 0.0;
  int64_t window_tokens = 0, window_steps = 0;
  auto window_start = Clock::now();
  const bool bf16 = c.precision == "bf16";

  // Rank 0's: validation, the early-stopping record and the checkpoints.
  auto validate_and_checkpoint = [&] {
    ValidationResult result;
    try {
      result = validator->run(model, device);
    } catch (...) {
      // The steps since the last checkpoint are not lost to a failed validation.
      save(make_checkpoint(), folder.last(), false);
      throw;
    }
    last_validated = progress.step;
    const double value = c.early_stopping_metric == "loss" ? result.loss
                         : c.early_stopping_metric == "chrf" ? result.chrf : result.bleu;
    const bool best = improved(c.early_stopping_metric, value, progress);
    if (best) {
      progress.best_metric = value;
      progress.best_step = progress.step;
      progress.bad_validations = 0;
    } else {
      ++progress.bad_validations;
    }
    record("valid", {{"loss", result.loss}, {"ppl", result.ppl}, {"bleu", result.bleu}, {"chrf", result.chrf},
                     {"best", best}, {"samples", result.samples}});
    spdlog::info("valid step {} | loss {:.4f} | ppl {:.2f} | bleu {:.2f} | chrf {:.2f}{}", progress.step, result.loss,
                 result.ppl, result.bleu, result.chrf, best ? " | best" : "");
    for (const auto& sample : result.samples) {
      spdlog::info("  src: {}\n  ref: {}\n  hyp: {}", sample["src"].get<std::string>(),
                   sample["ref"].get<std::string>(), sample["hyp"].get<std::string>());
    }
    const auto ckpt = make_checkpoint();
    save(ckpt, folder.last(), false);
    if (best) save(ckpt, folder.best(), true);
    if (c.checkpoint_every == 0) folder.save_numbered(progress.step, ckpt, c.keep_checkpoints);
  };

  while (true) {
    if (c.max_steps > 0 && progress.step >= c.max_steps) { reason = "steps"; break; }
    if (c.max_epochs > 0 && progress.next_batch.epoch >= c.max_epochs) { reason = "epochs"; break; }
    // Rank 0's clock and validations decide; a signal to any rank stops all of them.
    const auto stop = replicas.any({main_rank && max_time_s > 0 && elapsed() >= max_time_s,
                                    main_rank && c.early_stopping > 0 && progress.bad_validations >= c.early_stopping,
                                    stop_requested_ != nullptr && stop_requested_->load()});
    if (stop[0]) { reason = "time"; break; }
    if (stop[1]) { reason = "early-stop"; break; }
    if (stop[2]) { reason = "signal"; break; }

    // One update: `accumulate` global batches, gradients normalised by their target tokens together.
    std::vector<data::Batch> batches;
    int64_t tokens = 0;
    for (int64_t i = 0; i < c.accumulate; ++i) {
      batches.push_back(batcher.next());
      tokens += batches.back().global_target_tokens;
    }
    optimizer->zero_grad(true);
    torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device));
    for (size_t i = 0; i < batches.size(); ++i) {
      const auto& batch = batches[i];
      if (i + 1 == batches.size()) replicas.before_last_backward();
      if (batch.source.size(0) == 0) continue;  // this rank's share of a global batch smaller than the ranks
      torch::Tensor smoothed;
      {
        AutocastGuard autocast(bf16, device.type());
        smoothed = batch_loss(model, batch.source.to(device), batch.target_input.to(device),
                              batch.target_output.to(device), c.label_smoothing).smoothed;
      }
      (smoothed / static_cast<double>(tokens)).backward();
      loss_sum += smoothed.detach();
    }
    window_communication_s += replicas.sum_gradients();
    const double grad_norm = c.clip_norm > 0 ? torch::nn::utils::clip_grad_norm_(model->parameters(), c.clip_norm)
                                             : torch::nn::utils::clip_grad_norm_(model->parameters(), 1e30);
    const auto& last = batches.back().position;
    epoch_now = last.epoch + 1;
    progress.next_batch = last.index + 1 == batcher.batches_per_epoch() ? data::BatchPosition{last.epoch + 1, 0}
                                                                        : data::BatchPosition{last.epoch, last.index + 1};
    if (!std::isfinite(grad_norm)) {
      ++skipped_in_a_row;
      ++skipped_total;
      spdlog::warn("step {}: non-finite loss or gradient, update skipped ({} in a row)", progress.step + 1,
                   skipped_in_a_row);
      if (skipped_in_a_row >= kMaxSkippedUpdatesInARow) {
        record("end", {{"reason", "nan"}});
        throw RunError("training diverged: " + std::to_string(skipped_in_a_row) +
                       " updates in a row had a non-finite loss; the newest checkpoint is " +
                       (folder.checkpoints().empty() ? std::string("none") : folder.checkpoints().front().string()));
      }
      continue;
    }
    skipped_in_a_row = 0;
    const double lr = inverse_sqrt_lr(progress.step + 1, c.lr, c.warmup_steps);
    set_lr(*optimizer, lr);
    optimizer->step();
    ++progress.step;

    window_loss += loss_sum.item<double>();
    window_tokens += tokens;
    ++window_steps;
    if (c.log_every > 0 && progress.step % c.log_every == 0) {
      const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double loss = replicas.sum(window_loss) / static_cast<double>(window_tokens);
      const double tokens_per_s = static_cast<double>(window_tokens) / std::max(seconds, 1e-9);
      nlohmann::json fields = {{"loss", loss}, {"lr", lr}, {"grad_norm", grad_norm},
                               {"tgt_tokens_per_s", tokens_per_s}, {"skipped_updates", skipped_total}};
      if (replicas.size() > 1) fields["allreduce_s"] = window_communication_s / static_cast<double>(window_steps);
      record("train", fields);
      line.print(progress.step, epoch_now, loss, lr, tokens_per_s, elapsed());
      window_loss = window_communication_s = 0.0;
      window_tokens = window_steps = 0;
      window_start = Clock::now();
    }
    if (main_rank && c.valid_every > 0 && progress.step % c.valid_every == 0) validate_and_checkpoint();
    if (main_rank && c.checkpoint_every > 0 && progress.step % c.checkpoint_every == 0) {
      folder.save_numbered(progress.step, make_checkpoint(), c.keep_checkpoints);
    }
  }

  if (main_rank && reason == "signal") {
    save(make_checkpoint(), folder.last(), false);
  } else if (main_rank && last_validated != progress.step && progress.step > 0) {
    validate_and_checkpoint();
  }
  record("end", {{"reason", reason}});
  TrainResult result;
  result.reason = reason;
  result.step = progress.step;
  result.last_checkpoint = folder.last().string();
  result.best_checkpoint = std::filesystem::exists(folder.best()) ? folder.best().string() : "";
  result.best_metric = progress.best_metric;
  return result;
}

}  // namespace trafo::train
