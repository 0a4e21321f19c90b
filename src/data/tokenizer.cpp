#include "trafo/data/tokenizer.h"

#include <fstream>
#include <sstream>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "trafo/errors.h"

namespace trafo::data {
namespace {

// Streams the lines of several files to the SentencePiece trainer without loading them whole.
class FileLines : public sentencepiece::SentenceIterator {
 public:
  explicit FileLines(std::vector<std::filesystem::path> files) : files_(std::move(files)) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }

 private:
  void advance() {
    while (true) {
      if (stream_.is_open() && std::getline(stream_, line_)) return;
      if (next_file_ == files_.size()) {
        done_ = true;
        return;
      }
      stream_.close();
      stream_.open(files_[next_file_++]);
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
  sentencepiece::util::Status status_;
};

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
  std::ostringstream args;
  args << "--model_type=" << options.model_type << " --vocab_size=" << options.vocab_size
       << " --normalization_rule_name=" << options.normalization
       << " --character_coverage=" << options.character_coverage
       << " --input_sentence_size=" << options.max_sentences << " --shuffle_input_sentence=true"
       << " --byte_fallback=true --split_digits=true --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3"
       << " --num_threads=" << std::max(1, options.threads) << " --minloglevel=2";
  FileLines lines(files);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args.str(), &lines, &model);
  if (!status.ok()) {
    throw InputError("cannot train the vocabulary (vocab size " + std::to_string(options.vocab_size) +
                     "): " + status.message() + "; try a smaller --vocab-size");
  }
  return Tokenizer(std::move(model));
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
    if (id != kPad && id != kBos && id != kEos) kept.push_back(id);
  }
  std::string text;
  processor_->Decode(kept, &text).IgnoreError();
  return text;
}

std::string Tokenizer::piece(int id) const { return processor_->IdToPiece(id); }

int Tokenizer::vocab_size() const { return processor_->GetPieceSize(); }

}  // namespace trafo::data
