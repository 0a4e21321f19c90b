// The vocabulary: text to model ids and back. Either trafo's own, one joint SentencePiece model for
// source and target text whose ids are the model's, or an imported one (Hugging Face MarianMT): a
// SentencePiece model per side and an id table over their pieces. Both have the fixed special ids.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trafo/special_ids.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace trafo::data {

struct TokenizerOptions {
  int64_t vocab_size = 8000;              // pieces including pad/unk/bos/eos and the 256 byte pieces
  std::string model_type = "unigram";     // unigram | bpe
  std::string normalization = "nmt_nfkc"; // SentencePiece's normalisation rule (nmt_nfkc, nfkc, identity, ...)
  double character_coverage = 0.9995;     // characters outside it are spelled with byte pieces
  int64_t max_sentences = 2000000;        // lines sampled for training (0: all): --vocab-sample
  int threads = 1;                        // SentencePiece trainer threads
  std::vector<std::string> reserved;      // pieces never split (corpus tags), SentencePiece's user-defined symbols
};

// Corpus weights (positive, finite) times one power of two, the largest in [1, 2): their ratios and
// sums are exactly those of `weights`, but a sum cannot overflow (two weights of 1e308 would sum to
// infinity, and every share to 0). Every reader of the weights (the batches, the vocabulary sample,
// the log's shares) sums these.
std::vector<double> scaled_weights(const std::vector<double>& weights);

// A training corpus as the vocabulary sample sees it.
struct WeightedFiles {
  std::filesystem::path source, target;
  double weight = 1.0;
  int64_t lines = 0;  // line pairs in the files
};

// The lines a vocabulary learns from: pairs drawn from each corpus in proportion to its weight, both
// sides of each, `sentences` lines in all or every line of the corpora where they hold fewer (0: all).
// A corpus whose share is more pairs than it holds gives its lines more than once. The draw is fixed
// (no seed), so that runs on the same data may share a vocabulary.
std::vector<std::string> vocabulary_sample(const std::vector<WeightedFiles>& corpora, int64_t sentences);

class Tokenizer {
 public:
  static constexpr int kPad = kPadId, kUnk = kUnkId, kBos = kBosId, kEos = kEosId;  // special_ids.h

  // Trains on every line of `files` (train source and target). A text too small for
  // `options.vocab_size` gives a smaller vocabulary (with a warning): read vocab_size() for the
  // size obtained. Throws InputError for a file that is missing, not a regular file or holds no
  // text, or when SentencePiece cannot train.
  static Tokenizer train(const std::vector<std::filesystem::path>& files, const TokenizerOptions& options);
  // Trains on `lines` (vocabulary_sample's), all of them.
  static Tokenizer train_on_lines(std::vector<std::string> lines, const TokenizerOptions& options);
  // An imported vocabulary: source text is cut by `source_model`, target text by `target_model` (the
  // bytes of SentencePiece models), and a piece's id is its place in `pieces`, whose first four are
  // pad, unk, bos and eos; a piece not there is unk. `target_pieces`, when not empty, is the target
  // side's own table, as long as `pieces` (separate vocabularies). A leading language code
  // (">>fra<<") is one piece, as MarianMT's tokenizer has it. `start_is_pad`: the model started
  // decoding from its pad piece (OPUS-MT), so bos is a copy of pad (start_is_pad()). Throws
  // InputError for an invalid model or table.
  static Tokenizer from_table(std::string source_model, std::string target_model, std::vector<std::string> pieces,
                              std::vector<std::string> target_pieces = {}, bool start_is_pad = false);
  // Throws InputError, naming `name` (a file), unless `model` is a SentencePiece model.
  static void check_model(const std::string& model, const std::string& name);
  // Loads a serialised vocabulary: the bytes of a .model file, or to_bytes() of either kind, as
  // checkpoints store them.
  static Tokenizer from_bytes(const std::string& model);
  static Tokenizer load(const std::filesystem::path& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int> encode(const std::string& text) const;         // source text; no bos/eos
  std::vector<int> encode_target(const std::string& text) const;  // target text; no bos/eos
  std::vector<std::string> pieces(const std::string& text) const;  // the pieces `encode` gives
  // A sampled segmentation, for subword regularisation (Kudo 2018; BPE-dropout, Provilkov et al.
  // 2020). `alpha` is SentencePiece's: for a unigram model the smoothing of its distribution over
  // segmentations (smaller: closer to uniform), for a bpe model the probability of dropping a merge.
  // The draw depends on `seed` and the text alone, not on the thread or on earlier draws.
  std::vector<int> sample(const std::string& text, double alpha, uint64_t seed) const;
  std::vector<int> sample_target(const std::string& text, double alpha, uint64_t seed) const;
  // decode and piece throw InputError for an id outside the vocabulary.
  std::string decode(const std::vector<int>& ids) const;           // target text; pad/bos/eos are dropped
  std::string piece(int id) const;         // the source side's piece
  std::string target_piece(int id) const;  // the target side's (another only with separate vocabularies)
  int vocab_size() const;
  // The id of the reserved piece `symbol` (a corpus tag), or -1 when the model has no such piece.
  int reserved_id(const std::string& symbol) const;
  const std::string& to_bytes() const { return model_; }
  void save(const std::filesystem::path& path) const;
  // The SentencePiece models that cut source and target text (the same one in trafo's own kind),
  // and whether ids are pieces of a table (an imported vocabulary) rather than SentencePiece's ids.
  const std::string& source_model() const;
  const std::string& target_model() const;
  bool has_table() const { return !table_.empty(); }
  bool has_target_table() const { return !target_table_.empty(); }
  // An imported vocabulary whose model had one piece for pad and the decoder's start: trafo keeps it
  // twice (pad and bos), and an export joins the two again.
  bool start_is_pad() const { return start_is_pad_; }

 private:
  explicit Tokenizer(std::string model);
  static Tokenizer trained(std::string model, const TokenizerOptions& options);  // warns when smaller than asked
  void check_id(int id) const;
  // `alpha` > 0: a segmentation sampled with the generator as seeded (sample()).
  std::vector<int> ids_from_table(const sentencepiece::SentencePieceProcessor& processor,
                                  const std::unordered_map<std::string, int>& ids, std::string_view text,
                                  double alpha = 0.0) const;
  std::string model_;  // to_bytes(): the joint model, or the table form (tokenizer.cpp, table_bytes)
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;  // the joint or the source model
  // An imported vocabulary only:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> target_;
  std::string source_model_, target_model_;
  std::vector<std::string> table_;                 // id -> piece
  std::unordered_map<std::string, int> table_ids_;  // piece -> id
  std::vector<std::string> target_table_;           // separate vocabularies only: the target side's
  std::unordered_map<std::string, int> target_table_ids_;
  bool start_is_pad_ = false;
};

}  // namespace trafo::data
