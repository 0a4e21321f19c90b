#include "trafo/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/train/progress_line.h"
#include "trafo/train/schedule.h"
#include "trafo/train/train_step.h"
#include "trafo/util/memory.h"
#include "pace_check.h"
#include "run_report.h"
#include "session.h"

namespace trafo::train {
using run_config::TrainConfig;
namespace {

using Clock = RunClock::Clock;

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

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

// The corpora's tag pieces (each corpus's, -1 for none), each once.
std::vector<int> kept_tags(const std::vector<int>& tags) {
  std::vector<int> kept;
  for (const int tag : tags) {
    if (tag >= 0 && std::find(kept.begin(), kept.end(), tag) == kept.end()) kept.push_back(tag);
  }
  return kept;
}

// The parts of a session the training loop works with.
struct LoopParts {
  const TrainConfig& config;  // final
  Placement& place;           // replicas, and the threads that follow the load
  const RunFolder& folder;
  data::Batcher& batcher;
  model::Transformer& model;
  OptimizerState& training;
  Validation& validation;     // rank 0's
  RunLogs& logs;
  const RunClock& clock;
  size_t corpora;                // the corpora the batches come from
  std::vector<int> tags;         // the corpora's tag pieces, which word dropout keeps
  checkpoint::Checkpoint about;  // run_description: what every checkpoint says of the run
  PaceCheck pace;                // --preset auto's second look
};

// What each training step does, from the run's options and where it runs.
StepOptions step_options(const LoopParts& parts) {
  const auto& c = parts.config;
  StepOptions step;
  step.label_smoothing = c.optim.label_smoothing;
  step.clip_norm = c.optim.clip_norm;
  step.bf16 = parts.place.precision.bf16;
  step.src_word_dropout = c.optim.src_word_dropout;
  step.tgt_word_dropout = c.optim.tgt_word_dropout;
  step.kept = parts.tags;
  step.cuda_graphs = parts.place.cuda_graphs;
  step.guided_alignment_weight = run_config::guided(c) ? c.optim.guided_alignment_weight : 0.0;
  return step;
}

// The training loop over a session's parts: take a step, log it, validate and checkpoint, until a limit,
// early stopping or a signal ends the run.
class TrainingLoop {
 public:
  TrainingLoop(LoopParts parts, const std::atomic<bool>* stop_requested)
      : p_(std::move(parts)),
        c_(p_.config),
        progress_(p_.training.progress),
        step_(p_.model, *p_.training.optimizer, p_.place.device, step_options(p_), &p_.place.replicas),
        line_(c_, p_.batcher.batches_per_epoch(), p_.clock.max_time_s()),
        stop_requested_(stop_requested),
        // The 1-based epoch of the latest batch, as logs show it.
        epoch_now_(progress_.first_corpus().index > 0 ? progress_.first_corpus().epoch + 1
                                                       : std::max<int64_t>(1, progress_.first_corpus().epoch)),
        corpus_pairs_(p_.corpora, 0) {}

  // A fine-tuned run is validated before its first step (`validate_first`, rank 0): what it starts
  // from, as `trafo eval` sees it.
  //
  // Each update is queued before the one before it is read (docs/design.md "A step that never
  // waits"): the host learns whether an update was applied, and its loss and norm, while the device
  // works on the next. An update that would end on a log, validation or checkpoint step, or on the
  // last step, is read at once, so that those see the weights of that step and no later one.
  TrainResult run(bool validate_first) {
    window_ = Window{};
    if (validate_first && progress_.step == 0) validate_and_checkpoint();
    std::string reason;
    std::optional<StepResult> pending;
    while ((reason = stop_reason()).empty()) {
      const auto queueing = Clock::now();
      auto update = take_step(pending.has_value());
      const auto queued = Clock::now();
      pace_.queue_s += seconds(queueing, queued);
      follow_load();
      if (pending) settle(*std::exchange(pending, std::nullopt));
      if (read_at_once()) {
        const bool applied = settle(update);
        pace_.wait_s += seconds(queued, Clock::now());
        if (applied) after_update(update);
      } else {
        pace_.wait_s += seconds(queued, Clock::now());
        pending = std::move(update);
      }
    }
    if (pending) settle(*pending);
    return finish(reason);
  }

  void record(const std::string& event, const nlohmann::json& fields) {
    p_.logs.record(event, progress_.step, epoch_now_, p_.clock.elapsed(), fields);
  }

  // The preset to start again with, when the run ended for the second look ("second-look").
  const std::optional<SecondLook>& second_look() const { return second_look_; }

 private:
  bool main() const { return p_.place.main(); }
  checkpoint::Checkpoint make_checkpoint() { return p_.training.checkpoint(p_.about, p_.model, p_.clock.elapsed()); }

  bool every(int64_t steps) const { return steps > 0 && progress_.step % steps == 0; }

  // Empty while the run goes on. Rank 0's clock and validations decide; a signal to any rank stops all of them.
  std::string stop_reason() {
    if (c_.stop.max_steps > 0 && progress_.step >= c_.stop.max_steps) return "steps";
    if (c_.stop.max_epochs > 0 && progress_.first_corpus().epoch >= c_.stop.max_epochs) return "epochs";
    const bool main_rank = main();
    const bool patience_spent = c_.stop.early_stopping > 0 && progress_.bad_validations >= c_.stop.early_stopping;
    const auto stop = p_.place.replicas.any({main_rank && p_.clock.out_of_time(), main_rank && patience_spent,
                                             stop_requested_ != nullptr && stop_requested_->load()});
    if (stop[0]) return "time";
    if (stop[1]) return "early-stop";
    if (stop[2]) return "signal";
    if (second_look_) return "second-look";
    return "";
  }

  // Queues one update of `accumulate` global batches; the data stream moves on whether or not the
  // device applies it. Its learning rate counts `unread` updates not yet read as applied.
  StepResult take_step(bool unread) {
    std::vector<data::Batch> batches;
    for (int64_t i = 0; i < c_.optim.accumulate; ++i) batches.push_back(p_.batcher.next());
    const int64_t step = progress_.step + (unread ? 1 : 0) + 1;
    auto update = step_.run(batches, inverse_sqrt_lr(step, c_.optim.lr, c_.optim.warmup_steps));
    window_.communication_s += update.communication_s;
    for (const auto& batch : batches) {
      if (batch.corpus == 0) epoch_now_ = batch.position.epoch + 1;
      corpus_pairs_[static_cast<size_t>(batch.corpus)] += static_cast<int64_t>(batch.pairs.size());
    }
    progress_.data = batches.back().next;
    return update;
  }

  // Whether the update just queued must be read before the next is queued: it may end on a step that
  // logs, validates, checkpoints or ends the run, or the moving average follows every applied step.
  bool read_at_once() const {
    const int64_t step = progress_.step + 1;
    const auto at = [&](int64_t every) { return every > 0 && step % every == 0; };
    return p_.training.average || at(c_.run.log_every) || at(c_.run.valid_every) || at(c_.run.checkpoint_every) ||
           (c_.stop.max_steps > 0 && step >= c_.stop.max_steps);
  }

  // Reads an update (waiting for it if the device has not finished it) and counts it: false when the
  // NaN guard skipped it. Too many skipped in a row end the run.
  bool settle(const StepResult& update) {
    if (!update.applied()) {
      ++skipped_in_a_row_;
      ++skipped_total_;
      spdlog::warn("step {}: non-finite loss or gradient, update skipped ({} in a row)", progress_.step + 1,
                   skipped_in_a_row_);
      if (skipped_in_a_row_ >= kMaxSkippedUpdatesInARow) {
        record("end", {{"reason", "nan"}});
        const auto checkpoints = p_.folder.checkpoints();
        throw RunError("training diverged: " + std::to_string(skipped_in_a_row_) +
                       " updates in a row had a non-finite loss; the newest checkpoint is " +
                       (checkpoints.empty() ? std::string("none") : checkpoints.front().string()));
      }
      return false;
    }
    skipped_in_a_row_ = 0;
    ++progress_.step;
    if (p_.training.average) p_.training.average->update(progress_.step);
    window_.loss += update.loss();
    window_.tokens += update.target_tokens;
    ++window_.steps;
    look_at_pace();
    return true;
  }

  // --preset auto's second look, after each applied update until it has looked (PaceCheck).
  void look_at_pace() {
    if (second_look_) return;
    const auto at = progress_.first_corpus();
    const auto batches = std::max<int64_t>(1, p_.batcher.first_corpus_batches_per_epoch());
    const double epochs = static_cast<double>(at.epoch) + static_cast<double>(at.index) / static_cast<double>(batches);
    second_look_ = p_.pace.observe(progress_.step, epochs, p_.clock.elapsed());
  }

  // What follows an applied update read at once: the log line, validation and checkpoints.
  void after_update(const StepResult& update) {
    if (second_look_) return;  // the run starts again: this attempt saves nothing
    if (every(c_.run.log_every)) log_train(update);
    if (main() && every(c_.run.valid_every)) validate_and_checkpoint();
    if (main() && every(c_.run.checkpoint_every)) {
      p_.folder.save_numbered(progress_.step, make_checkpoint(), c_.run.keep_checkpoints);
    }
  }

  // With --threads 0, every kLoadCheckEvery: the threads the cores other processes leave free allow.
  void follow_load() {
    auto& place = p_.place;
    if (!place.load || Clock::now() - load_checked_ < kLoadCheckEvery) return;
    load_checked_ = Clock::now();
    const double others = place.load->busy_cores();
    const int threads = util::threads_for_load(util::resolve_threads(0), others);
    if (threads == place.threads) return;
    spdlog::info("other processes now keep about {:.1f} of {} cores busy: training goes on with {} threads", others,
                 util::resolve_threads(0), threads);
    at::set_num_threads(threads);
    place.threads = threads;
  }

  void log_train(const StepResult& update) {
    const double seconds = std::chrono::duration<double>(Clock::now() - window_.start).count();
    const double loss = p_.place.replicas.sum(window_.loss) / static_cast<double>(window_.tokens);
    const double tokens_per_s = static_cast<double>(window_.tokens) / std::max(seconds, 1e-9);
    nlohmann::json fields = {{"loss", loss}, {"lr", update.lr}, {"grad_norm", update.grad_norm()},
                             {"tgt_tokens_per_s", tokens_per_s}, {"skipped_updates", skipped_total_}};
    if (p_.place.replicas.size() > 1) fields["allreduce_s"] = window_.communication_s / static_cast<double>(window_.steps);
    if (corpus_pairs_.size() > 1) {
      // Pairs this process took from each corpus since the last train record.
      fields["corpus_pairs"] = corpus_pairs_;
      std::fill(corpus_pairs_.begin(), corpus_pairs_.end(), 0);
    }
    record("train", fields);
    line_.print(progress_.step, epoch_now_, loss, update.lr, tokens_per_s, p_.clock.elapsed());
    window_ = Window{};
  }

  // Rank 0's: validation (of the moving average with --ema), the early-stopping record and the checkpoints.
  void validate_and_checkpoint() {
    ValidationResult result;
    try {
      std::optional<WeightAverage::Applied> averaged;
      if (p_.training.average) averaged.emplace(*p_.training.average);
      result = p_.validation.validator->run(p_.model);
    } catch (...) {
      // The steps since the last checkpoint are not lost to a failed validation.
      save(make_checkpoint(), p_.folder.last(), false);
      throw;
    }
    last_validated_ = progress_.step;
    const double value = c_.stop.early_stopping_metric == "loss" ? result.loss
                         : c_.stop.early_stopping_metric == "chrf" ? result.chrf : result.bleu;
    watch_plateau(progress_, c_.stop.early_stopping_metric, value);
    const bool best = improved(c_.stop.early_stopping_metric, value, progress_);
    if (best) {
      progress_.best_metric = value;
      progress_.best_step = progress_.step;
    }
    record("valid", report_validation(progress_.step, result, best));
    const auto ckpt = make_checkpoint();
    save(ckpt, p_.folder.last(), false);
    if (best) save(ckpt, p_.folder.best(), true);
    if (c_.run.checkpoint_every == 0) p_.folder.save_numbered(progress_.step, ckpt, c_.run.keep_checkpoints);
    util::release_free_memory();
  }

  // A stop by signal saves where the run stands; any other end validates the steps since the last validation.
  TrainResult finish(const std::string& reason) {
    const int64_t step = progress_.step;
    if (reason == "second-look") {  // before any checkpoint: the run starts again (Trainer::run)
      spdlog::info("{}: the run starts again with --preset {}", second_look_->why, second_look_->preset);
      record("end", {{"reason", reason}, {"preset", second_look_->preset}});
      return TrainResult{reason, step, "", "", 0.0};
    }
    if (main() && reason == "signal") {
      save(make_checkpoint(), p_.folder.last(), false);
    } else if (main() && last_validated_ != step && step > 0) {
      validate_and_checkpoint();
    }
    nlohmann::json end = {{"reason", reason}};
    if (main() && reason != "nan") report_advice(p_.folder.path(), end);
    report_pace(pace_.queue_s, pace_.wait_s, p_.place.device.is_cuda(), step_.graphs(), progress_.step, end);
    record("end", end);
    TrainResult result;
    result.reason = reason;
    result.step = progress_.step;
    result.last_checkpoint = p_.folder.last().string();
    result.best_checkpoint = std::filesystem::exists(p_.folder.best()) ? p_.folder.best().string() : "";
    result.best_metric = progress_.best_metric;
    return result;
  }

  void save(const checkpoint::Checkpoint& ckpt, const std::filesystem::path& path, bool best) {
    checkpoint::save(path, ckpt, util::Special::kReplace);
    record("checkpoint", {{"path", path.string()}, {"best", best}});
  }

  LoopParts p_;
  const TrainConfig& c_;
  Progress& progress_;
  TrainStep step_;
  const ProgressLine line_;
  const std::atomic<bool>* stop_requested_;
  int64_t epoch_now_;
  std::vector<int64_t> corpus_pairs_;  // taken from each corpus since the last train record
  int64_t last_validated_ = -1;
  int64_t skipped_in_a_row_ = 0;  // NaN guard: updates skipped since the last applied one
  int64_t skipped_total_ = 0;
  Window window_;
  std::optional<SecondLook> second_look_;
  Clock::time_point load_checked_ = Clock::now();
  // The loop's time outside logging, validation and checkpoints: queueing steps, and waiting for them.
  struct {
    double queue_s = 0.0;
    double wait_s = 0.0;
  } pace_;
};

// One session's training: the loop over its parts, from its start record to its end. With
// `look_again`, --preset auto's second look may end it early, setting `again`.
TrainResult train_session(Session& s, const std::atomic<bool>* stop_requested, bool look_again,
                          std::optional<SecondLook>& again) {
  const auto& c = s.config;
  int64_t first_save = 0;  // the first step that validates or saves, the last one included
  for (const int64_t every : {c.run.valid_every, c.run.checkpoint_every, c.stop.max_steps}) {
    if (every > 0) first_save = first_save == 0 ? every : std::min(first_save, every);
  }
  const bool armed = look_again && s.settled.preset.timed && !s.resumed() && !s.fine_tuned() &&
                     s.place.replicas.size() == 1;
  TrainingLoop loop(LoopParts{s.config, s.place, s.folder, s.batcher, s.model, s.training, s.validation, s.logs,
                              s.clock, s.data.corpora.size(), kept_tags(s.data.tags), run_description(s),
                              PaceCheck(armed, s.settled.preset.name, s.settled.max_time_s, first_save)},
                    stop_requested);
  loop.record("start", start_record(s));
  log_start(s);
  auto result = loop.run(/*validate_first=*/s.main_rank() && s.fine_tuned());
  again = loop.second_look();
  return result;
}

}  // namespace

Trainer::Trainer(TrainConfig config, const std::atomic<bool>* stop_requested)
    : config_(std::move(config)), stop_requested_(stop_requested) {}

Trainer::~Trainer() = default;

TrainResult Trainer::run() {
  std::optional<SecondLook> again;
  std::optional<Session::Again> restart;
  RunLogs::AtOpen before;  // what an earlier run without checkpoints left in the folder
  {
    Session s(config_);
    auto result = train_session(s, stop_requested_, /*look_again=*/true, again);
    if (result.reason != "second-look" || (stop_requested_ != nullptr && stop_requested_->load())) return result;
    before = s.logs.at_open();
    restart = Session::Again{s.started, again->why};
  }
  before.restore();  // the first attempt saved no checkpoint
  auto config = config_;
  config.run.preset = again->preset;
  Session s(config, &*restart);
  std::optional<SecondLook> none;
  return train_session(s, stop_requested_, /*look_again=*/false, none);
}

}  // namespace trafo::train
