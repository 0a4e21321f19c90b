#include "trafo/train/options.h"

#include <cctype>

#include "trafo/errors.h"

namespace trafo::train {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw InputError(message);
}

}  // namespace

double parse_duration(const std::string& text) {
  if (text.empty()) return 0.0;
  double total = 0.0;
  size_t i = 0;
  while (i < text.size()) {
    size_t digits = i;
    while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
      ++digits;
    }
    if (digits == i) throw InputError("invalid duration '" + text + "' (use e.g. 90s, 20m, 1h30m)");
    const double value = std::stod(text.substr(i, digits - i));
    const char unit = digits < text.size() ? text[digits] : 's';
    const double scale = unit == 'h' ? 3600.0 : unit == 'm' ? 60.0 : unit == 's' ? 1.0 : -1.0;
    if (scale < 0) throw InputError("invalid duration '" + text + "' (use e.g. 90s, 20m, 1h30m)");
    total += value * scale;
    i = digits + 1;
  }
  return total;
}

void validate(const TrainConfig& c) {
  model::validate(c.model);
  require(!c.data_dir.empty() || (!c.train_src.empty() && !c.train_tgt.empty() && !c.dev_src.empty() &&
                                  !c.dev_tgt.empty()),
          "give --data-dir DIR (with --src-lang/--tgt-lang) or --train-src/--train-tgt/--dev-src/--dev-tgt");
  require(c.vocab.vocab_size >= 300, "vocab-size must be at least 300 (256 byte pieces, specials and subwords)");
  require(c.optimizer == "adam" || c.optimizer == "adamw", "optimizer must be adam or adamw");
  require(c.lr > 0, "lr must be positive");
  require(c.warmup_steps >= 0, "warmup-steps must not be negative");
  require(c.adam_beta1 >= 0 && c.adam_beta1 < 1 && c.adam_beta2 >= 0 && c.adam_beta2 < 1, "adam betas must be in [0, 1)");
  require(c.adam_eps > 0, "adam-eps must be positive");
  require(c.weight_decay >= 0, "weight-decay must not be negative");
  require(c.clip_norm >= 0, "clip-norm must not be negative");
  require(c.label_smoothing >= 0 && c.label_smoothing < 1, "label-smoothing must be in [0, 1)");
  require(c.batch_tokens > 0, "batch-tokens must be positive");
  require(c.accumulate >= 1, "accumulate must be at least 1");
  require(c.max_steps >= 0, "max-steps must not be negative");
  require(c.max_epochs >= 0, "max-epochs must not be negative");
  require(parse_duration(c.max_time) >= 0, "max-time must not be negative");
  require(c.max_steps > 0 || c.max_epochs > 0 || !c.max_time.empty() || c.early_stopping > 0,
          "set a limit: --max-steps, --max-epochs, --max-time or --early-stopping");
  require(c.early_stopping >= 0, "early-stopping must not be negative");
  require(c.early_stopping_metric == "bleu" || c.early_stopping_metric == "chrf" || c.early_stopping_metric == "loss",
          "early-stopping-metric must be bleu, chrf or loss");
  require(c.valid_every >= 0 && c.checkpoint_every >= 0 && c.log_every >= 0, "frequencies must not be negative");
  require(c.valid_max_sentences >= 0 && c.valid_samples >= 0, "valid-max-sentences and valid-samples must not be negative");
  require(c.keep_checkpoints >= 0, "keep-checkpoints must not be negative");
  require(c.max_length >= 0 && c.max_length_ratio >= 0, "max-length and max-length-ratio must not be negative");
  require(c.device == "cpu" || c.device == "cuda" || c.device == "auto", "device must be cpu, cuda or auto");
  require(c.threads >= 0 && c.threads <= 1024, "threads must be between 0 (all cores) and 1024");
  require(c.precision == "fp32" || c.precision == "bf16", "precision must be fp32 or bf16");
  require(!c.run_dir.empty(), "run-dir must not be empty");
  require(c.nproc >= 1 && c.nproc <= 1024, "nproc must be between 1 and 1024");
  require(c.dist_timeout > 0 && c.dist_timeout <= 86400, "dist-timeout must be between 0 and 86400 seconds");
}

}  // namespace trafo::train
