// Word alignments for guided-alignment training (train --guided-alignment): a file of Pharaoh links
// ("0-0 1-2 ...", source word - target word, 0-based, one line per line pair, as eflomal and
// fast_align write them) mapped onto the pieces of a tokenized corpus. Source word i and target word j
// linked link every piece of word i with every piece of word j; a word is a piece that starts with
// SentencePiece's word mark (U+2581) and the pieces after it that do not. Built once per corpus and
// alignment file and kept in the cache folder beside the corpus's token cache (docs/design.md
// "Guided alignment").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace trafo::data {

class Corpus;
class Tokenizer;

// (source word, target word) of one line; throws InputError "FILE:LINE: ..." for a field that is not
// two non-negative numbers joined by '-'.
std::vector<std::pair<int, int>> read_word_links(std::string_view line, const std::string& file, int64_t line_number);

// The word each of `count` pieces belongs to (0-based), the first `skip` pieces (a corpus tag) -1.
// `starts_word[id]`: whether piece `id` begins a word.
std::vector<int> piece_words(const int32_t* ids, int64_t count, int64_t skip, const std::vector<bool>& starts_word);

// Which pieces of `tokenizer` begin a word: the source side's (false) or the target side's (true).
std::vector<bool> word_starts(const Tokenizer& tokenizer, bool target_side);

// The links of every pair of a corpus, as (source piece, target piece) positions in the pair's stored
// pieces (the tag first where there is one).
class PieceLinks {
 public:
  struct Link {
    uint16_t source;
    uint16_t target;
  };
  int64_t size() const { return static_cast<int64_t>(offsets_.size()) - 1; }  // pairs
  int64_t links() const { return static_cast<int64_t>(links_.size()); }
  const Link* begin(int64_t pair) const { return links_.data() + offsets_[static_cast<size_t>(pair)]; }
  const Link* end(int64_t pair) const { return links_.data() + offsets_[static_cast<size_t>(pair) + 1]; }

  // The links of `pairs` as a batch takes them (data::Batch::alignment): [B,T,S] fp32, row t of pair
  // b the source pieces target piece t is linked to, each 1 / their number. A pair with links has its
  // unlinked rows (words the aligner left out, and the eos row) linked to its source eos, the null
  // word: the head learns to say "no link" there, which align reads back. Zeros elsewhere.
  // `lengths[b]`: pair b's source and target pieces (no eos), as the batch holds them.
  at::Tensor matrix(const std::vector<int64_t>& pairs, const std::vector<std::pair<int64_t, int64_t>>& lengths,
                    int64_t target_width, int64_t source_width) const;

  void add_pair(const std::vector<Link>& links);
  std::string to_bytes() const;
  // Throws InputError when `bytes` are not to_bytes() of a table of `pairs` pairs.
  static PieceLinks from_bytes(const std::string& bytes, int64_t pairs);

 private:
  std::vector<int64_t> offsets_{0};
  std::vector<Link> links_;
};

// The links of `corpus`'s pairs read from `alignment`, whose lines match the corpus files' `lines`
// lines one for one. Throws InputError naming the file (and line) for another line count or a malformed
// link. A pair with a link to a word past its words (SentencePiece's normalisation counted its words
// otherwise) keeps no links, with a warning; more than 1% of the pairs so is an InputError naming the
// first. `tag`: the corpus tag's id (-1: none).
PieceLinks map_word_links(const Corpus& corpus, const Tokenizer& tokenizer, const std::filesystem::path& alignment,
                          int64_t lines, int tag);

// map_word_links, done once: kept in `folder` under a name made of `corpus_file` (the corpus's token
// cache) and the stamps of the corpus files and the alignment file, and read back while they keep them.
PieceLinks open_piece_links(const std::filesystem::path& folder, const std::filesystem::path& corpus_file,
                            const std::filesystem::path& source, const std::filesystem::path& target,
                            const Corpus& corpus, const Tokenizer& tokenizer, const std::filesystem::path& alignment,
                            int64_t lines, int tag);

}  // namespace trafo::data
