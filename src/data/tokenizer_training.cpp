// Learning a tokenizer: SentencePiece trained on files or on the lines vocabulary_sample draws from
// weighted corpora, with trafo's special ids (tokenizer.h). The tokenizer's reading and writing of
// text is tokenizer.cpp's.
#include "trafo/data/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <unordered_map>

#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"

namespace trafo::data {

namespace {

// SentencePiece leaves lines over its max_sentence_length (4,192 bytes by default) out of learning
// the vocabulary without a word; trafo raises it to the longest line it translates, and counts the
// lines past that.
constexpr size_t kMaxSentenceBytes = size_t{1} << 20;

// Streams the lines of several files to the SentencePiece trainer without loading them whole,
// and notes the files that hold no text.
class FileLines : public sentencepiece::SentenceIterator {
 public:
  explicit FileLines(std::vector<std::filesystem::path> files) : files_(std::move(files)) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }
  const std::vector<std::filesystem::path>& empty_files() const { return empty_files_; }
  int64_t too_long() const { return too_long_; }

 private:
  void advance() {
    while (true) {
      if (stream_.is_open() && std::getline(stream_, line_)) {
        if (line_.find_first_not_of(" \t\r\f\v") != std::string::npos) current_has_text_ = true;
        too_long_ += line_.size() > kMaxSentenceBytes;
        return;
      }
      if (stream_.is_open() && !current_has_text_) empty_files_.push_back(files_[next_file_ - 1]);
      if (next_file_ == files_.size()) {
        done_ = true;
        return;
      }
      stream_.close();
      stream_.open(files_[next_file_++]);
      current_has_text_ = false;
      if (!stream_) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound,
                                              "cannot read " + files_[next_file_ - 1].string());
        done_ = true;
        return;
      }
    }
  }
  std::vector<std::filesystem::path> files_;
  size_t next_file_ = 0;
  std::ifstream stream_;
  std::string line_;
  bool done_ = false;
  bool current_has_text_ = false;
  int64_t too_long_ = 0;
  std::vector<std::filesystem::path> empty_files_;
  sentencepiece::util::Status status_;
};

// SentencePiece's reason, on one line, without the source location and expression of the check
// that failed, and with the fix in trafo's option names.
std::string training_failure(std::string message, int64_t vocab_size) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  const auto location = message.find(".cc(");
  const auto check_end = location == std::string::npos ? location : message.find("] ", location);
  // Past the check's location and expression comes its reason; a check without one keeps its text.
  if (check_end != std::string::npos && message.find_first_not_of(' ', check_end + 2) != std::string::npos) {
    message.erase(0, check_end + 2);
  }
  if (message.find_first_not_of(' ') == std::string::npos) message = "SentencePiece failed without a reason";
  const std::string prefix = "cannot train the vocabulary (--vocab-size " + std::to_string(vocab_size) + "): ";
  long asked = 0, needed = 0;
  const auto required = message.find("required_chars. ");
  if (required != std::string::npos && std::sscanf(message.c_str() + required, "required_chars. %ld vs %ld", &asked,
                                                   &needed) == 2) {
    return prefix + "the text's characters, the 256 byte pieces and the specials need " + std::to_string(needed) +
           " pieces; use a larger --vocab-size or a smaller --vocab-character-coverage";
  }
  if (message.find("too high") != std::string::npos) message += "; try a smaller --vocab-size";
  if (message.find("sentences_.empty()") != std::string::npos) {
    return prefix + "SentencePiece found no line to learn from: it leaves out lines over " +
           std::to_string(kMaxSentenceBytes >> 20) +
           " MiB, and every line of the training text is longer; check the line breaks, or split the lines";
  }
  return prefix + message;
}

void warn_too_long(int64_t lines) {
  spdlog::warn("{} lines longer than {} MiB are left out of learning the vocabulary",
               lines, kMaxSentenceBytes >> 20);
}

// Lines held in memory, for the SentencePiece trainer.
class HeldLines : public sentencepiece::SentenceIterator {
 public:
  explicit HeldLines(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  bool done() const override { return next_ >= lines_.size(); }
  void Next() override { ++next_; }
  const std::string& value() const override { return lines_[next_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> lines_;
  size_t next_ = 0;
};

std::unordered_map<std::string, std::string> trainer_arguments(const TokenizerOptions& options, int64_t sample) {
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw InputError("vocab type must be unigram or bpe, not '" + options.model_type + "'");
  }
  // The map form of Train, unlike the command-line form, logs no "Running command" line, and it
  // sets minloglevel before anything else is logged. A soft vocabulary limit lets a small corpus
  // train a smaller vocabulary instead of failing; the size obtained is reported below.
  std::unordered_map<std::string, std::string> args = {
      {"minloglevel", "2"},
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"normalization_rule_name", options.normalization},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"input_sentence_size", std::to_string(sample)},
      {"shuffle_input_sentence", "true"},
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"pad_id", std::to_string(kPadId)},
      {"unk_id", std::to_string(kUnkId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      {"num_threads", std::to_string(std::max(1, options.threads))},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)}};
  if (!options.reserved.empty()) {
    std::string symbols;
    for (const auto& symbol : options.reserved) symbols += (symbols.empty() ? "" : ",") + symbol;
    args["user_defined_symbols"] = symbols;
  }
  return args;
}

// Knuth's selection sampling: `count` of the numbers 0 .. total - 1, in order, in one pass.
class Selection {
 public:
  Selection(int64_t count, int64_t total, uint64_t seed) : needed_(count), left_(total), rng_(seed) {}
  bool take() {
    const bool taken = needed_ > 0 && static_cast<double>(rng_() >> 11) * 0x1.0p-53 * left_ < needed_;
    --left_;
    needed_ -= taken;
    return taken;
  }

 private:
  int64_t needed_, left_;
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<double> scaled_weights(const std::vector<double>& weights) {
  double largest = 0.0;
  for (const double weight : weights) largest = std::max(largest, weight);
  // A power of two scales exactly: the same shares, bit for bit, as the weights given.
  const int exponent = largest > 0.0 && std::isfinite(largest) ? std::ilogb(largest) : 0;
  std::vector<double> scaled;
  for (const double weight : weights) scaled.push_back(std::ldexp(weight, -exponent));
  return scaled;
}

std::vector<std::string> vocabulary_sample(const std::vector<WeightedFiles>& corpora, int64_t sentences) {
  int64_t total_pairs = 0;
  std::vector<double> weights;
  for (const auto& corpus : corpora) {
    total_pairs += corpus.lines;
    weights.push_back(corpus.weight);
  }
  weights = scaled_weights(weights);
  double total_weight = 0.0;
  for (const double weight : weights) total_weight += weight;
  const int64_t pairs = sentences > 0 ? std::min(sentences / 2, total_pairs) : total_pairs;
  std::vector<std::string> lines;
  for (size_t c = 0; c < corpora.size(); ++c) {
    const auto& corpus = corpora[c];
    if (corpus.lines == 0) continue;
    const auto share = corpora.size() == 1 ? pairs
                                           : static_cast<int64_t>(std::llround(pairs * weights[c] / total_weight));
    // Whole passes over the corpus, then a selection of the lines left to draw.
    const int64_t passes = share / corpus.lines;
    Selection selection(share % corpus.lines, corpus.lines, 0x5EED0000ULL + c);
    std::ifstream source(corpus.source, std::ios::binary), target(corpus.target, std::ios::binary);
    std::string src, tgt;
    while (std::getline(source, src) && std::getline(target, tgt)) {
      const int64_t copies = passes + (selection.take() ? 1 : 0);
      for (int64_t k = 0; k < copies; ++k) {
        lines.push_back(src);
        lines.push_back(tgt);
      }
    }
  }
  return lines;
}

Tokenizer Tokenizer::train(const std::vector<std::filesystem::path>& files, const TokenizerOptions& options) {
  for (const auto& file : files) check_text_file(file);
  const auto args = trainer_arguments(options, options.max_sentences);
  FileLines lines(files);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  if (lines.too_long() > 0) warn_too_long(lines.too_long());
  if (!status.ok()) {
    if (!lines.empty_files().empty()) {
      throw InputError("cannot train the vocabulary: " + lines.empty_files().front().string() + " holds no text");
    }
    throw InputError(training_failure(status.message(), options.vocab_size));
  }
  return trained(std::move(model), options);
}

Tokenizer Tokenizer::train_on_lines(std::vector<std::string> lines, const TokenizerOptions& options) {
  const auto args = trainer_arguments(options, 0);
  const auto too_long = std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.size() > kMaxSentenceBytes;
  });
  if (too_long > 0) warn_too_long(too_long);
  HeldLines held(std::move(lines));
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &held, &model);
  if (!status.ok()) throw InputError(training_failure(status.message(), options.vocab_size));
  return trained(std::move(model), options);
}

Tokenizer Tokenizer::trained(std::string model, const TokenizerOptions& options) {
  Tokenizer tokenizer(std::move(model));
  if (tokenizer.vocab_size() < options.vocab_size) {
    spdlog::warn("the training text supports a vocabulary of {} pieces, not the {} asked for (--vocab-size)",
                 tokenizer.vocab_size(), options.vocab_size);
  }
  return tokenizer;
}

}  // namespace trafo::data
