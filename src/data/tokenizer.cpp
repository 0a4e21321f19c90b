#include "trafo/data/tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/util/base64.h"

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
      {"num_threads", std::to_string(std::max(1, options.threads))}};
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

namespace {

// An imported vocabulary's to_bytes(): this line, then JSON with both SentencePiece models (base64)
// and the id table. No SentencePiece model starts so (its first byte is a protobuf tag).
constexpr std::string_view kTableMagic = "trafo-vocabulary-table 1\n";

std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_of(const std::string& model, const char* what) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(model);
  if (!status.ok()) throw InputError(std::string("invalid SentencePiece model") + what + ": " + status.ToString());
  return processor;
}

}  // namespace

Tokenizer::Tokenizer(std::string model) : model_(std::move(model)) {
  if (std::string_view(model_).substr(0, kTableMagic.size()) != kTableMagic) {
    processor_ = processor_of(model_, "");
    if (processor_->pad_id() != kPad || processor_->unk_id() != kUnk || processor_->bos_id() != kBos ||
        processor_->eos_id() != kEos) {
      throw InputError("SentencePiece model does not use the ids pad=0 unk=1 bos=2 eos=3");
    }
    return;
  }
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(model_.substr(kTableMagic.size()));
    source_model_ = util::from_base64(json.at("source").get<std::string>(), "the vocabulary's source model");
    target_model_ = util::from_base64(json.at("target").get<std::string>(), "the vocabulary's target model");
    table_ = json.at("pieces").get<std::vector<std::string>>();
    if (json.contains("target_pieces")) target_table_ = json.at("target_pieces").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid vocabulary table: ") + e.what());
  }
  if (table_.size() < 4) throw InputError("invalid vocabulary table: fewer than the 4 special pieces");
  if (has_target_table() && target_table_.size() != table_.size()) {
    throw InputError("invalid vocabulary table: the target table's length is not the source table's");
  }
  const auto index = [](const std::vector<std::string>& table, std::unordered_map<std::string, int>& ids) {
    for (size_t id = 0; id < table.size(); ++id) {
      if (!ids.emplace(table[id], static_cast<int>(id)).second) {
        throw InputError("invalid vocabulary table: the piece '" + table[id] + "' is there twice");
      }
    }
  };
  index(table_, table_ids_);
  index(target_table_, target_table_ids_);
  processor_ = processor_of(source_model_, " (source)");
  target_ = processor_of(target_model_, " (target)");
}

Tokenizer Tokenizer::from_table(std::string source_model, std::string target_model, std::vector<std::string> pieces,
                                std::vector<std::string> target_pieces) {
  nlohmann::json json = {{"source", util::to_base64(source_model)},
                         {"target", util::to_base64(target_model)},
                         {"pieces", std::move(pieces)}};
  if (!target_pieces.empty()) json["target_pieces"] = std::move(target_pieces);
  return Tokenizer(std::string(kTableMagic) + json.dump());
}

const std::string& Tokenizer::source_model() const { return has_table() ? source_model_ : model_; }
const std::string& Tokenizer::target_model() const { return has_table() ? target_model_ : model_; }

// MarianMT's tokenizer: a leading language code (">>" up to the first "<<") is one piece, the rest is
// cut by SentencePiece; a piece the table lacks is unk.
std::vector<int> Tokenizer::ids_from_table(const sentencepiece::SentencePieceProcessor& processor,
                                           const std::unordered_map<std::string, int>& table_ids,
                                           std::string_view text) const {
  std::vector<int> ids;
  const auto piece_id = [&](const std::string& piece) {
    const auto found = table_ids.find(piece);
    ids.push_back(found == table_ids.end() ? kUnk : found->second);
  };
  if (text.substr(0, 2) == ">>") {
    if (const auto end = text.find("<<"); end != std::string_view::npos) {
      piece_id(std::string(text.substr(0, end + 2)));
      text.remove_prefix(end + 2);
    }
  }
  std::vector<std::string> pieces;
  processor.Encode(text, &pieces).IgnoreError();
  for (const auto& piece : pieces) piece_id(piece);
  return ids;
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::train(const std::vector<std::filesystem::path>& files, const TokenizerOptions& options) {
  for (const auto& file : files) check_text_file(file);
  const auto args = trainer_arguments(options, options.max_sentences);
  FileLines lines(files);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
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

Tokenizer Tokenizer::from_bytes(const std::string& model) { return Tokenizer(model); }

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read tokenizer model " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  try {
    return Tokenizer(bytes.str());
  } catch (const InputError& e) {
    throw InputError(path.string() + ": " + e.what());  // which file holds the bad model
  }
}

void Tokenizer::save(const std::filesystem::path& path) const {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  out << model_;
  out.close();
  if (!out) throw_write_error(path.string(), errno != 0 ? errno : EIO);
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
  if (has_table()) return ids_from_table(*processor_, table_ids_, text);
  std::vector<int> ids;
  processor_->Encode(text, &ids).IgnoreError();
  return ids;
}

std::vector<int> Tokenizer::encode_target(const std::string& text) const {
  if (!has_table()) return encode(text);
  return ids_from_table(*target_, has_target_table() ? target_table_ids_ : table_ids_, text);
}

std::vector<std::string> Tokenizer::pieces(const std::string& text) const {
  std::vector<std::string> result;
  if (has_table()) {
    for (const int id : encode(text)) result.push_back(table_[static_cast<size_t>(id)]);
    return result;
  }
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
  if (has_table()) {
    // As MarianMT's tokenizer: the target model joins the pieces, a word-start mark it leaves (in a
    // piece it lacks, one of the source side's) is a space, and spaces at either end go.
    std::vector<std::string> pieces;
    for (const int id : kept) pieces.push_back(target_piece(id));
    target_->Decode(pieces, &text).IgnoreError();
    static const std::string kWordStart = "\xe2\x96\x81";  // U+2581
    for (size_t at = text.find(kWordStart); at != std::string::npos; at = text.find(kWordStart, at + 1)) {
      text.replace(at, kWordStart.size(), " ");
    }
    const auto first = text.find_first_not_of(' ');
    return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(' ') - first + 1);
  }
  processor_->Decode(kept, &text).IgnoreError();
  return text;
}

std::string Tokenizer::piece(int id) const {
  check_id(id);
  return has_table() ? table_[static_cast<size_t>(id)] : processor_->IdToPiece(id);
}

std::string Tokenizer::target_piece(int id) const {
  check_id(id);
  return has_target_table() ? target_table_[static_cast<size_t>(id)] : piece(id);
}

void Tokenizer::check_id(int id) const {
  // SentencePiece reads out of bounds for such ids; a model with more outputs than its
  // tokenizer has pieces (a mismatched checkpoint) would otherwise crash here.
  if (id < 0 || id >= vocab_size()) {
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(vocab_size()) + " pieces: the model does not match its tokenizer");
  }
}

int Tokenizer::vocab_size() const {
  return has_table() ? static_cast<int>(table_.size()) : processor_->GetPieceSize();
}

int Tokenizer::reserved_id(const std::string& symbol) const {
  if (has_table()) {  // a language code the table holds: one piece at the start of a line
    const auto ids = encode(symbol);
    return ids.size() == 1 && symbol.size() > 4 && symbol.substr(0, 2) == ">>" && ids[0] != kUnk ? ids[0] : -1;
  }
  const int id = processor_->PieceToId(symbol);
  if (id == kUnk || symbol.empty()) return -1;
  // A reserved piece is matched inside text, where a learned one would carry the word-start mark.
  const auto ids = encode("a " + symbol);
  return std::find(ids.begin(), ids.end(), id) != ids.end() ? id : -1;
}

}  // namespace trafo::data
