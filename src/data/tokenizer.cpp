#include "trafo/data/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"

namespace trafo::data {
namespace {

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

 private:
  void advance() {
    while (true) {
      if (stream_.is_open() && std::getline(stream_, line_)) {
        if (line_.find_first_not_of(" \t\r\f\v") != std::string::npos) current_has_text_ = true;
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
    return prefix + "SentencePiece found no line to learn from: it leaves out lines over 4192 bytes, and every "
                    "line of the training text is longer; check the line breaks, or split the lines";
  }
  return prefix + message;
}

}  // namespace

Tokenizer::Tokenizer(std::string model)
    : model_(std::move(model)), processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->LoadFromSerializedProto(model_);
  if (!status.ok()) throw InputError("invalid SentencePiece model: " + status.ToString());
  if (processor_->pad_id() != kPad || processor_->unk_id() != kUnk || processor_->bos_id() != kBos ||
      processor_->eos_id() != kEos) {
    throw InputError("SentencePiece model does not use the ids pad=0 unk=1 bos=2 eos=3");
  }
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::train(const std::vector<std::filesystem::path>& files, const TokenizerOptions& options) {
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw InputError("vocab type must be unigram or bpe, not '" + options.model_type + "'");
  }
  for (const auto& file : files) check_text_file(file);
  // The map form of Train, unlike the command-line form, logs no "Running command" line, and it
  // sets minloglevel before anything else is logged. A soft vocabulary limit lets a small corpus
  // train a smaller vocabulary instead of failing; the size obtained is reported below.
  const std::unordered_map<std::string, std::string> args = {
      {"minloglevel", "2"},
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"normalization_rule_name", options.normalization},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"input_sentence_size", std::to_string(options.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"pad_id", std::to_string(kPad)},
      {"unk_id", std::to_string(kUnk)},
      {"bos_id", std::to_string(kBos)},
      {"eos_id", std::to_string(kEos)},
      {"num_threads", std::to_string(std::max(1, options.threads))}};
  FileLines lines(files);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  if (!status.ok()) {
    if (!lines.empty_files().empty()) {
      throw InputError("cannot train the vocabulary: " + lines.empty_files().front().string() + " holds no text");
    }
    throw InputError(training_failure(status.message(), options.vocab_size));
  }
  Tokenizer tokenizer(std::move(model));
  if (tokenizer.vocab_size() < options.vocab_size) {
    spdlog::warn("the training text supports a vocabulary of {} pieces, not the {} asked for (--vocab-size)",
                 tokenizer.vocab_size(), options.vocab_size);
  }
  return tokenizer;
}

Tokenizer Tokenizer::from_bytes(const std::string& model) { return Tokenizer(model); }

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read tokenizer model " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return Tokenizer(bytes.str());
}

void Tokenizer::save(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary);
  out << model_;
  if (!out) throw RunError("cannot write " + path.string());
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  processor_->Encode(text, &ids).IgnoreError();
  return ids;
}

std::vector<std::string> Tokenizer::pieces(const std::string& text) const {
  std::vector<std::string> result;
  processor_->Encode(text, &result).IgnoreError();
  return result;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (const int id : ids) {
    check_id(id);
    if (id != kPad && id != kBos && id != kEos) kept.push_back(id);
  }
  std::string text;
  processor_->Decode(kept, &text).IgnoreError();
  return text;
}

std::string Tokenizer::piece(int id) const {
  check_id(id);
  return processor_->IdToPiece(id);
}

void Tokenizer::check_id(int id) const {
  // SentencePiece reads out of bounds for such ids; a model with more outputs than its
  // tokenizer has pieces (a mismatched checkpoint) would otherwise crash here.
  if (id < 0 || id >= vocab_size()) {
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(vocab_size()) + " pieces: the model does not match its tokenizer");
  }
}

int Tokenizer::vocab_size() const { return processor_->GetPieceSize(); }

}  // namespace trafo::data
