#include "trafo/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/train/progress_line.h"
#include "trafo/train/schedule.h"
#include "trafo/train/train_step.h"
#include "session.h"

namespace trafo::train {
using run_config::TrainConfig;
namespace {

using Clock = Session::Clock;

constexpr int64_t kMaxSkippedUpdatesInARow = 5;  // docs/design.md "NaN guard"
constexpr std::chrono::seconds kLoadCheckEvery{10};

bool improved(const std::string& metric, double value, const Progress& progress) {
  if (progress.best_step < 0) return true;
  return metric == "loss" ? value < progress.best_metric : value > progress.best_metric;
}

// The figures of a train record: sums over the updates applied since the previous one.
struct Window {
  double loss = 0.0;             // smoothed loss, this process's
  int64_t tokens = 0;            // global target tokens
  int64_t steps = 0;
  double communication_s = 0.0;  // of every update, skipped ones too
  Clock::time_point start = Clock::now();
};

// The training loop over a session: take a step, log it, validate and checkpoint, until a limit,
// early stopping or a signal ends the run.
class TrainingLoop {
 public:
  TrainingLoop(Session& session, const std::atomic<bool>* stop_requested)
      : s_(session),
        c_(session.config),
        progress_(session.progress),
        step_(session.model, *session.optimizer, session.device,
              StepOptions{c_.label_smoothing, c_.clip_norm, s_.precision.bf16}, &session.replicas),
        line_(c_, session.batcher.batches_per_epoch(), session.max_time_s),
        stop_requested_(stop_requested),
        // The 1-based epoch of the latest batch, as logs show it.
        epoch_now_(progress_.first_corpus().index > 0 ? progress_.first_corpus().epoch + 1
                                                       : std::max<int64_t>(1, progress_.first_corpus().epoch)),
        corpus_pairs_(s_.corpora.size(), 0) {}

  TrainResult run() {
    record_start();
    // A fine-tuned run is validated before its first step: what it starts from, as `trafo eval` sees it.
    if (s_.main_rank() && s_.fine_tuned() && progress_.step == 0) validate_and_checkpoint();
    std::string reason;
    while ((reason = stop_reason()).empty()) {
      const auto update = take_step();
      follow_load();
      if (!update) continue;  // skipped by the NaN guard
      if (every(c_.log_every)) log_train(*update);
      if (s_.main_rank() && every(c_.valid_every)) validate_and_checkpoint();
      if (s_.main_rank() && every(c_.checkpoint_every)) {
        s_.folder.save_numbered(progress_.step, s_.make_checkpoint(), c_.keep_checkpoints);
      }
    }
    return finish(reason);
  }

 private:
  bool every(int64_t steps) const { return steps > 0 && progress_.step % steps == 0; }

  // Empty while the run goes on. Rank 0's clock and validations decide; a signal to any rank stops all of them.
  std::string stop_reason() {
    if (c_.max_steps > 0 && progress_.step >= c_.max_steps) return "steps";
    if (c_.max_epochs > 0 && progress_.first_corpus().epoch >= c_.max_epochs) return "epochs";
    const bool main = s_.main_rank();
    const auto stop = s_.replicas.any({main && s_.max_time_s > 0 && s_.elapsed() >= s_.max_time_s,
                                       main && c_.early_stopping > 0 && progress_.bad_validations >= c_.early_stopping,
                                       stop_requested_ != nullptr && stop_requested_->load()});
    if (stop[0]) return "time";
    if (stop[1]) return "early-stop";
    if (stop[2]) return "signal";
    return "";
  }

  // One update of `accumulate` global batches; empty when the NaN guard skipped it. The data stream
  // moves on either way; too many skipped in a row end the run.
  std::optional<StepResult> take_step() {
    std::vector<data::Batch> batches;
    for (int64_t i = 0; i < c_.accumulate; ++i) batches.push_back(s_.batcher.next());
    const auto update = step_.run(batches, inverse_sqrt_lr(progress_.step + 1, c_.lr, c_.warmup_steps));
    window_.communication_s += update.communication_s;
    for (const auto& batch : batches) {
      if (batch.corpus == 0) epoch_now_ = batch.position.epoch + 1;
      corpus_pairs_[static_cast<size_t>(batch.corpus)] += static_cast<int64_t>(batch.pairs.size());
    }
    progress_.data = batches.back().next;
    if (!update.applied) {
      spdlog::warn("step {}: non-finite loss or gradient, update skipped ({} in a row)", progress_.step + 1,
                   step_.skipped_in_a_row());
      if (step_.skipped_in_a_row() >= kMaxSkippedUpdatesInARow) {
        record("end", {{"reason", "nan"}});
        const auto checkpoints = s_.folder.checkpoints();
        throw RunError("training diverged: " + std::to_string(step_.skipped_in_a_row()) +
                       " updates in a row had a non-finite loss; the newest checkpoint is " +
                       (checkpoints.empty() ? std::string("none") : checkpoints.front().string()));
      }
      return std::nullopt;
    }
    ++progress_.step;
    if (s_.average) s_.average->update(progress_.step);
    window_.loss += update.loss;
    window_.tokens += update.target_tokens;
    ++window_.steps;
    return update;
  }

  // With --threads 0, every kLoadCheckEvery: the threads the cores other processes leave free allow.
  void follow_load() {
    if (!s_.load || Clock::now() - load_checked_ < kLoadCheckEvery) return;
    load_checked_ = Clock::now();
    const double others = s_.load->busy_cores();
    const int threads = util::threads_for_load(util::resolve_threads(0), others);
    if (threads == s_.threads) return;
    spdlog::info("other processes now keep about {:.1f} of {} cores busy: training goes on with {} threads", others,
                 util::resolve_threads(0), threads);
    at::set_num_threads(threads);
    s_.threads = threads;
  }

  void log_train(const StepResult& update) {
    const double seconds = std::chrono::duration<double>(Clock::now() - window_.start).count();
    const double loss = s_.replicas.sum(window_.loss) / static_cast<double>(window_.tokens);
    const double tokens_per_s = static_cast<double>(window_.tokens) / std::max(seconds, 1e-9);
    nlohmann::json fields = {{"loss", loss}, {"lr", update.lr}, {"grad_norm", update.grad_norm},
                             {"tgt_tokens_per_s", tokens_per_s}, {"skipped_updates", step_.skipped_total()}};
    if (s_.replicas.size() > 1) fields["allreduce_s"] = window_.communication_s / static_cast<double>(window_.steps);
    if (corpus_pairs_.size() > 1) {
      // Pairs this process took from each corpus since the last train record.
      fields["corpus_pairs"] = corpus_pairs_;
      std::fill(corpus_pairs_.begin(), corpus_pairs_.end(), 0);
    }
    record("train", fields);
    line_.print(progress_.step, epoch_now_, loss, update.lr, tokens_per_s, s_.elapsed());
    window_ = Window{};
  }

  // Rank 0's: validation (of the moving average with --ema), the early-stopping record and the checkpoints.
  void validate_and_checkpoint() {
    ValidationResult result;
    try {
      std::optional<WeightAverage::Applied> averaged;
      if (s_.average) averaged.emplace(*s_.average);
      result = s_.validator->run(s_.model);
    } catch (...) {
      // The steps since the last checkpoint are not lost to a failed validation.
      save(s_.make_checkpoint(), s_.folder.last(), false);
      throw;
    }
    last_validated_ = progress_.step;
    const double value = c_.early_stopping_metric == "loss" ? result.loss
                         : c_.early_stopping_metric == "chrf" ? result.chrf : result.bleu;
    const bool best = improved(c_.early_stopping_metric, value, progress_);
    if (best) {
      progress_.best_metric = value;
      progress_.best_step = progress_.step;
      progress_.bad_validations = 0;
    } else {
      ++progress_.bad_validations;
    }
    record("valid", {{"loss", result.loss}, {"ppl", result.ppl}, {"bleu", result.bleu}, {"chrf", result.chrf},
                     {"repetition_loops", result.repetition_loops}, {"best", best}, {"samples", result.samples}});
    spdlog::info("valid step {} | loss {:.4f} | ppl {:.2f} | bleu {:.2f} | chrf {:.2f} | loops {}{}", progress_.step,
                 result.loss, result.ppl, result.bleu, result.chrf, result.repetition_loops, best ? " | best" : "");
    for (const auto& sample : result.samples) {
      spdlog::info("  src: {}\n  ref: {}\n  hyp: {}", sample["src"].get<std::string>(),
                   sample["ref"].get<std::string>(), sample["hyp"].get<std::string>());
    }
    const auto ckpt = s_.make_checkpoint();
    save(ckpt, s_.folder.last(), false);
    if (best) save(ckpt, s_.folder.best(), true);
    if (c_.checkpoint_every == 0) s_.folder.save_numbered(progress_.step, ckpt, c_.keep_checkpoints);
  }

  // A stop by signal saves where the run stands; any other end validates the steps since the last validation.
  TrainResult finish(const std::string& reason) {
    const int64_t step = progress_.step;
    if (s_.main_rank() && reason == "signal") {
      save(s_.make_checkpoint(), s_.folder.last(), false);
    } else if (s_.main_rank() && last_validated_ != step && step > 0) {
      validate_and_checkpoint();
    }
    record("end", {{"reason", reason}});
    TrainResult result;
    result.reason = reason;
    result.step = progress_.step;
    result.last_checkpoint = s_.folder.last().string();
    result.best_checkpoint = std::filesystem::exists(s_.folder.best()) ? s_.folder.best().string() : "";
    result.best_metric = progress_.best_metric;
    return result;
  }

  void save(const checkpoint::Checkpoint& ckpt, const std::filesystem::path& path, bool best) {
    checkpoint::save(path, ckpt);
    record("checkpoint", {{"path", path.string()}, {"best", best}});
  }

  void record(const std::string& event, const nlohmann::json& fields) {
    if (s_.log_file) s_.log_file->check();
    if (s_.metrics) s_.metrics->write(event, progress_.step, epoch_now_, s_.elapsed(), fields);
    if (s_.tensorboard && (event == "train" || event == "valid")) {
      s_.tensorboard->scalars(event, fields, progress_.step);
    }
  }

  void record_start() {
    auto& replicas = s_.replicas;
    nlohmann::json start = {{"config", s_.config_text}, {"version", TRAFO_VERSION}, {"torch", TORCH_VERSION},
                            {"threads", s_.threads}, {"device", s_.device.str()}, {"world_size", replicas.size()},
                            {"resumed", s_.resumed()}, {"train_pairs", s_.train_pairs()},
                            {"vocab_size", s_.tokenizer.vocab_size()}, {"parameters", s_.model->parameter_count()}};
    if (replicas.size() > 1) {
      start["gradient_bytes"] = replicas.gradient_bytes();
      start["gradient_allreduce_s"] = replicas.time_gradient_all_reduce();
      spdlog::info("one all-reduce of the gradients ({:.1f} MB): {:.3f} s", replicas.gradient_bytes() / 1e6,
                   start["gradient_allreduce_s"].get<double>());
    }
    if (s_.average) start["ema"] = c_.ema;
    start["precision"] = s_.precision.name();
    start["precision_reason"] = s_.precision.reason;
    start["validation_precision"] = s_.decoding_precision.name();
    start["validation_precision_reason"] = s_.decoding_precision.reason;
    describe_data(start);
    if (!c_.init_from.empty()) start["init_from"] = c_.init_from;
    record("start", start);
    if (s_.fine_tuned()) {
      spdlog::info("fine-tuning from {}: its weights, tokenizer and model, a fresh optimizer from step 0",
                   c_.init_from);
    }
    spdlog::info("{} {} at step {}: {} training pairs, {} batches per epoch, {} parameters, {} threads on {}, {}{}",
                 s_.resumed() ? "resuming" : "starting", s_.folder.path().string(), progress_.step, s_.train_pairs(),
                 s_.batcher.batches_per_epoch(), s_.model->parameter_count(), s_.threads, s_.device.str(),
                 replicas.describe(),
                 s_.average ? fmt::format(", validating and saving a moving average of the weights (--ema {})", c_.ema)
                            : "");
    if (s_.load && s_.busy_at_start >= 0.5) {
      spdlog::info("other processes keep about {:.1f} of {} cores busy: training on {} threads, following the load "
                   "(--threads N fixes the number)",
                   s_.busy_at_start, util::resolve_threads(0), s_.threads);
    }
    spdlog::info("precision {}: {}", s_.precision.name(), s_.precision.reason);
    spdlog::info("validation precision {}: {}", s_.decoding_precision.name(), s_.decoding_precision.reason);
    window_ = Window{};
  }

  // The corpora (pairs, weight, share of the pairs served, tag, token cache) and the leak check, in the
  // `start` record and the log.
  void describe_data(nlohmann::json& start) const {
    std::vector<double> weights;
    for (const auto& corpus : s_.paths.train) weights.push_back(corpus.weight);
    weights = data::scaled_weights(weights);  // sums that cannot overflow
    double total_weight = 0.0;
    for (const double weight : weights) total_weight += weight;
    nlohmann::json corpora = nlohmann::json::array();
    for (size_t i = 0; i < s_.corpora.size(); ++i) {
      const auto& spec = s_.paths.train[i];
      const auto& cached = s_.corpora[i];
      const double share = weights[i] / total_weight;
      corpora.push_back({{"src", spec.src}, {"tgt", spec.tgt}, {"pairs", cached.corpus.size()}, {"weight", spec.weight},
                         {"share", share}, {"tag", spec.tag}, {"token_cache", cached.file.string()},
                         {"token_cache_built", cached.built}});
      spdlog::info("corpus {}: {} / {}: {} pairs, weight {} ({:.1f}% of the pairs served){}; token cache {} ({} in {:.1f} s)",
                   i + 1, spec.src, spec.tgt, cached.corpus.size(), spec.weight, 100.0 * share,
                   spec.tag.empty() ? "" : ", tag " + spec.tag, cached.file.string(),
                   cached.built ? "built" : "mapped", cached.seconds);
    }
    start["corpora"] = corpora;
    start["cache_dir"] = s_.cache.string();
    if (!s_.main_rank()) return;
    start["dev_pairs_in_training"] = s_.leaks.dev.in_training.size();
    if (s_.leaks.test) start["test_pairs_in_training"] = s_.leaks.test->in_training.size();
  }

  Session& s_;
  TrainConfig& c_;
  Progress& progress_;
  TrainStep step_;
  const ProgressLine line_;
  const std::atomic<bool>* stop_requested_;
  int64_t epoch_now_;
  std::vector<int64_t> corpus_pairs_;  // taken from each corpus since the last train record
  int64_t last_validated_ = -1;
  Window window_;
  Clock::time_point load_checked_ = Clock::now();
};

}  // namespace

Trainer::Trainer(TrainConfig config, const std::atomic<bool>* stop_requested)
    : config_(std::move(config)), stop_requested_(stop_requested) {}

Trainer::~Trainer() = default;

TrainResult Trainer::run() {
  Session session(config_);
  return TrainingLoop(session, stop_requested_).run();
}

}  // namespace trafo::train
