#include "trafo/run_config/options.h"

#include <cctype>
#include <charconv>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/run_config/presets.h"
#include "trafo/util/device.h"
#include "trafo/util/language_tag.h"

namespace trafo::run_config {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw InputError(message);
}

// A floating option: finite and within [low, high].
void require_range(double value, double low, double high, const std::string& message) {
  require(std::isfinite(value) && value >= low && value <= high, message);
}

// A token budget far above any real batch; larger ones only fail later, allocating.
constexpr int64_t kMaxBatchTokens = int64_t{1} << 24;

}  // namespace

bool was_given(const TrainConfig& config, const std::string& key) {
  return !config.given || config.given->count(key) > 0;
}

double parse_duration(const std::string& text) {
  if (text.empty()) return 0.0;
  auto invalid = [&text] { return InputError("invalid --max-time '" + text + "' (use e.g. 90, 90s, 20m, 1h30m)"); };
  // NUMBER UNIT groups with the units h, m, s in that order, each at most once; a bare
  // number alone is seconds.
  const std::string units = "hms";
  size_t next_unit = 0;
  double total = 0.0;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = i;
    int digits = 0, points = 0;
    for (; end < text.size(); ++end) {
      const char c = text[end];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++digits;
      } else if (c == '.') {
        ++points;
      } else {
        break;
      }
    }
    if (digits == 0 || points > 1) throw invalid();
    double value = 0.0;
    const auto parsed = std::from_chars(text.data() + i, text.data() + end, value);
    if (parsed.ec != std::errc() || parsed.ptr != text.data() + end) throw invalid();
    double scale = 1.0;
    if (end == text.size()) {
      if (i != 0) throw invalid();  // "1h30": minutes or seconds? say which
    } else {
      const auto unit = units.find(text[end], next_unit);
      if (unit == std::string::npos) throw invalid();
      next_unit = unit + 1;
      scale = unit == 0 ? 3600.0 : unit == 1 ? 60.0 : 1.0;
      ++end;
    }
    total += value * scale;
    i = end;
  }
  if (!std::isfinite(total)) throw invalid();
  if (total > kMaxTimeSeconds) {
    throw InputError("--max-time '" + text + "' is longer than " + std::to_string(std::llround(kMaxTimeSeconds / 3600)) +
                     "h, its limit");
  }
  return total;
}

namespace {

// The pieces SentencePiece reserves: a tag may be none of them.
bool is_reserved_piece(const std::string& tag) {
  if (tag == "<pad>" || tag == "<unk>" || tag == "<s>" || tag == "</s>") return true;
  return tag.size() == 6 && tag.rfind("<0x", 0) == 0 && tag.back() == '>' && std::isxdigit(static_cast<unsigned char>(tag[3])) &&
         std::isxdigit(static_cast<unsigned char>(tag[4]));
}

void check_corpus(const CorpusSpec& corpus, size_t number) {
  const std::string name = "corpus " + std::to_string(number) + " ";
  require(!corpus.src.empty() && !corpus.tgt.empty(), name + "needs src and tgt files");
  require(std::isfinite(corpus.weight) && corpus.weight > 0,
          name + "weight must be positive and finite, not " + fmt::format("{}", corpus.weight));
  for (const auto* text : {&corpus.src, &corpus.tgt, &corpus.tag, &corpus.alignment}) {
    data::check_utf8(*text, name + "text");
    require(std::none_of(text->begin(), text->end(),
                         [](char ch) { return (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f; }) &&
                (text->find('"') == std::string::npos || text->find('\'') == std::string::npos),
            name + "must not hold control characters, nor both \" and '");
  }
  require(corpus.tag.find_first_of(" \t\u00a0") == std::string::npos && corpus.tag.find("\xe2\x96\x81") == std::string::npos,
          name + "tag '" + corpus.tag + "' must not hold white space (a tag is one piece)");
  require(corpus.tag.find(',') == std::string::npos,
          name + "tag '" + corpus.tag + "' must not hold a comma (tags are passed to SentencePiece comma-separated)");
  require(!is_reserved_piece(corpus.tag), name + "tag '" + corpus.tag +
                                              "' is a piece SentencePiece reserves (<pad>, <unk>, <s>, </s>, <0xHH>)");
  for (const auto* language : {&corpus.src_lang, &corpus.tgt_lang}) {
    require(language->find_first_of(" \t,<>") == std::string::npos,
            name + "language '" + *language + "' must be a code such as fr or pt_BR (no space, comma, < or >)");
  }
}

}  // namespace

std::vector<std::string> target_languages(const TrainConfig& c) {
  std::vector<std::string> targets;
  for (const auto& corpus : c.data.corpora) {
    const auto& target = target_language(corpus, c.data);
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) targets.push_back(target);
  }
  if (targets.empty()) targets.push_back(c.data.tgt_lang);
  return targets;
}

void tag_targets(TrainConfig& c) {
  const auto targets = target_languages(c);
  if (targets.size() < 2) return;
  for (size_t i = 0; i < c.data.corpora.size(); ++i) {
    auto& corpus = c.data.corpora[i];
    const auto tag = util::language_tag(target_language(corpus, c.data));
    if (corpus.tag.empty()) corpus.tag = tag;
    if (corpus.tag != tag) {
      throw InputError("corpus " + std::to_string(i + 1) + " has the tag " + corpus.tag +
                       ", and a model of several target languages puts " + tag + " before its sources: drop the tag");
    }
  }
  if (std::find(targets.begin(), targets.end(), c.data.tgt_lang) == targets.end()) {
    std::string listed;
    for (const auto& target : targets) listed += (listed.empty() ? "" : ", ") + target;
    throw InputError("--tgt-lang " + c.data.tgt_lang + " (the dev set's) is none of the corpora's target languages (" +
                     listed + ")");
  }
  if (c.run.valid_tag.empty()) c.run.valid_tag = util::language_tag(c.data.tgt_lang);
}

bool guided(const TrainConfig& c) {
  return c.optim.guided_alignment_weight > 0 && (!c.data.guided_alignment.empty() ||
         std::any_of(c.data.corpora.begin(), c.data.corpora.end(),
                     [](const CorpusSpec& corpus) { return !corpus.alignment.empty(); }));
}

int64_t guided_layer(const TrainConfig& c) {
  if (!guided(c)) return -1;
  return c.data.guided_alignment_layer > 0 ? c.data.guided_alignment_layer - 1 : c.model.decoder_layers - 1;
}

namespace {

// The guided alignment options, and the model (model::validate).
void validate_alignment_and_model(const TrainConfig& c) {
  require(c.data.guided_alignment_layer >= 0 && c.data.guided_alignment_layer <= c.model.decoder_layers,
          "guided-alignment-layer must be a decoder layer, 1 to " + std::to_string(c.model.decoder_layers) +
              " (0: the last), not " + std::to_string(c.data.guided_alignment_layer));
  require(std::isfinite(c.optim.guided_alignment_weight) && c.optim.guided_alignment_weight >= 0 &&
              c.optim.guided_alignment_weight <= 1000,
          "guided-alignment-weight must be between 0 and 1000");
  require(c.data.guided_alignment.empty() || c.data.corpora.empty(),
          "with --corpus, give each corpus's alignment file as its fifth field (or alignment= in [[corpus]]), "
          "not --guided-alignment");
  model::validate(c.model);
}

// Text options end up in config.toml and in the checkpoint's JSON metadata, which hold UTF-8 only.
void validate_utf8_texts(const TrainConfig& c) {
  for (const auto& key : config_keys()) {
    const Field field = key.field(const_cast<TrainConfig&>(c));
    if (const auto* text = std::get_if<std::string*>(&field)) {
      data::check_utf8(**text, "--" + std::string(key.name));
    }
  }
}

// Where the data comes from: a folder, or files and corpora, each given once.
void validate_data(const TrainConfig& c) {
  const bool train_given = !c.data.corpora.empty() || (!c.data.train_src.empty() && !c.data.train_tgt.empty());
  require(!c.data.data_dir.empty() || (train_given && !c.data.dev_src.empty() && !c.data.dev_tgt.empty()),
          "give --data-dir DIR (with --src-lang/--tgt-lang), or the training data (--train-src/--train-tgt or "
          "--corpus) and --dev-src/--dev-tgt");
  require(c.data.corpora.empty() || (c.data.train_src.empty() && c.data.train_tgt.empty()),
          "give the training data as --corpus (or [[corpus]] tables) or as --train-src/--train-tgt, not both");
  require(c.data.test_src.empty() == c.data.test_tgt.empty(), "give --test-src and --test-tgt together");
  for (size_t i = 0; i < c.data.corpora.size(); ++i) check_corpus(c.data.corpora[i], i + 1);
  require(c.run.valid_tag.empty() || std::any_of(c.data.corpora.begin(), c.data.corpora.end(),
                                             [&](const CorpusSpec& corpus) { return corpus.tag == c.run.valid_tag; }),
          "valid-tag " + c.run.valid_tag + " is not the tag of a corpus");
}

// The vocabulary to learn.
void validate_vocabulary(const TrainConfig& c) {
  require(c.vocab.vocab_size >= 300 && c.vocab.vocab_size <= model::kMaxVocabSize,
          "vocab-size must be between 300 (256 byte pieces, specials and subwords) and " +
              std::to_string(model::kMaxVocabSize) + ", not " + std::to_string(c.vocab.vocab_size));
  require(c.vocab.model_type == "unigram" || c.vocab.model_type == "bpe", "vocab-type must be unigram or bpe");
  require(c.vocab.normalization == "nmt_nfkc" || c.vocab.normalization == "nfkc" ||
              c.vocab.normalization == "nmt_nfkc_cf" || c.vocab.normalization == "nfkc_cf" ||
              c.vocab.normalization == "identity",
          "vocab-normalization must be nmt_nfkc, nfkc, nmt_nfkc_cf, nfkc_cf or identity");
  require(std::isfinite(c.vocab.character_coverage) && c.vocab.character_coverage > 0 &&
              c.vocab.character_coverage <= 1,
          "vocab-character-coverage must be in (0, 1]");
  require(c.vocab.max_sentences >= 0, "the vocabulary's sentence sample must not be negative");
}

// The optimizer, its schedule and the batches.
void validate_optimization(const TrainConfig& c) {
  require(c.optim.optimizer == "adam" || c.optim.optimizer == "adamw", "optimizer must be adam or adamw");
  require(std::isfinite(c.optim.lr) && c.optim.lr > 0, "lr must be positive and finite");
  require(c.optim.warmup_steps >= 0, "warmup-steps must not be negative");
  require(c.optim.adam_beta1 >= 0 && c.optim.adam_beta1 < 1 && c.optim.adam_beta2 >= 0 && c.optim.adam_beta2 < 1,
          "adam betas must be in [0, 1)");
  require(std::isfinite(c.optim.adam_eps) && c.optim.adam_eps > 0, "adam-eps must be positive and finite");
  require_range(c.optim.weight_decay, 0.0, HUGE_VAL, "weight-decay must be finite and not negative");
  require_range(c.optim.clip_norm, 0.0, HUGE_VAL, "clip-norm must be finite and not negative");
  require(c.optim.label_smoothing >= 0 && c.optim.label_smoothing < 1, "label-smoothing must be in [0, 1)");
  require(c.optim.src_word_dropout >= 0 && c.optim.src_word_dropout < 1, "src-word-dropout must be in [0, 1)");
  require(c.optim.tgt_word_dropout >= 0 && c.optim.tgt_word_dropout < 1, "tgt-word-dropout must be in [0, 1)");
  require(c.optim.batch_tokens >= 0 && c.optim.batch_tokens <= kMaxBatchTokens,  // 0: auto
          "batch-tokens must be auto or between 1 and " + std::to_string(kMaxBatchTokens));
  // The batches of one update are held until its step: far beyond any real use, memory runs out.
  require(c.optim.accumulate >= 1 && c.optim.accumulate <= 1000, "accumulate must be between 1 and 1000");
  require(c.optim.ema >= 0 && c.optim.ema < 1, "ema must be in [0, 1) (0: off)");
}

// When the run stops, validates, saves and logs, and which pairs and corpora it draws.
void validate_limits(const TrainConfig& c) {
  require(c.stop.max_steps >= 0, "max-steps must not be negative");
  require(c.stop.max_epochs >= 0, "max-epochs must not be negative");
  require(c.stop.max_time.empty() || parse_duration(c.stop.max_time) > 0,
          "max-time must be positive, not '" + c.stop.max_time + "'");
  require(c.stop.max_steps > 0 || c.stop.max_epochs > 0 || !c.stop.max_time.empty() || c.stop.early_stopping > 0,
          "set a limit: --max-steps, --max-epochs, --max-time or --early-stopping");
  require(c.stop.early_stopping >= 0, "early-stopping must not be negative");
  require(c.stop.early_stopping_metric == "bleu" || c.stop.early_stopping_metric == "chrf" ||
              c.stop.early_stopping_metric == "loss",
          "early-stopping-metric must be bleu, chrf or loss");
  require(c.run.valid_every >= 0 && c.run.checkpoint_every >= 0 && c.run.log_every >= 0,
          "frequencies must not be negative");
  require(c.run.valid_max_sentences >= 0 && c.run.valid_samples >= 0,
          "valid-max-sentences and valid-samples must not be negative");
  require(c.run.keep_checkpoints >= 0, "keep-checkpoints must not be negative");
  require(c.data.max_length >= 0, "max-length must not be negative");
  require_range(c.data.max_length_ratio, 0.0, HUGE_VAL, "max-length-ratio must be finite and not negative");
  require(c.data.all_caps_every >= 0 && c.data.title_case_every >= 0,
          "all-caps-every and title-case-every must not be negative (0: off)");
  require_range(c.data.sampling_temperature, 0.0, HUGE_VAL,
                "sampling-temperature must be finite and not negative (0: off)");
}

// The preset, subword sampling, the machine and the processes.
void validate_run_and_machine(const TrainConfig& c) {
  require(c.run.preset == "auto" || find_preset(c.run.preset) != nullptr,
          "preset must be auto, " + preset_names() + ", not '" + c.run.preset + "'");
  require(c.data.subword_alpha >= 0 && c.data.subword_alpha < 1, "subword-alpha must be in [0, 1) (0: off)");
  require(c.data.subword_samples >= 1 && c.data.subword_samples <= 64, "subword-samples must be between 1 and 64");
  require(c.machine.device == "cpu" || c.machine.device == "cuda" || c.machine.device == "auto",
          "device must be cpu, cuda or auto");
  util::resolve_threads(c.machine.threads);  // the one check of --threads, shared with the other commands
  require(c.machine.precision == "fp32" || c.machine.precision == "bf16" || c.machine.precision == "auto",
          "precision must be fp32, bf16 or auto");
  require(c.machine.cuda_graphs == "auto" || c.machine.cuda_graphs == "on" || c.machine.cuda_graphs == "off",
          "cuda-graphs must be auto, on or off");
  require(!c.run.run_dir.empty(), "run-dir must not be empty");
  require(c.parallel.nproc >= 1 && c.parallel.nproc <= 1024, "nproc must be between 1 and 1024");
  require(std::isfinite(c.parallel.dist_timeout) && c.parallel.dist_timeout > 0 && c.parallel.dist_timeout <= 86400,
          "dist-timeout must be more than 0 and at most 86400 seconds");
}

// Every text must go into config.toml and read back: one line, quoted with " or '.
void validate_texts_fit_config(const TrainConfig& c) {
  TrainConfig texts = c;
  for (const auto& key : config_keys()) {
    const Field field = key.field(texts);
    if (!std::holds_alternative<std::string*>(field)) continue;
    const std::string& text = *std::get<std::string*>(field);
    const bool control = std::any_of(text.begin(), text.end(), [](char ch) {
      return (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f;
    });
    require(!control && (text.find('"') == std::string::npos || text.find('\'') == std::string::npos),
            std::string(key.name) + " must not hold control characters, nor both \" and '");
  }
}

}  // namespace

void validate(const TrainConfig& c) {
  validate_alignment_and_model(c);
  validate_utf8_texts(c);
  validate_data(c);
  validate_vocabulary(c);
  validate_optimization(c);
  validate_limits(c);
  validate_run_and_machine(c);
  validate_texts_fit_config(c);
}

}  // namespace trafo::run_config
