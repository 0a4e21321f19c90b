#include "trafo/decode/glossary.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::decode {
namespace {

constexpr std::string_view kWordStart = "\xe2\x96\x81";  // SentencePiece's mark of a piece that begins a word

}  // namespace

Glossary::File Glossary::read(const std::filesystem::path& path) {
  const auto lines = util::read_lines(path);
  File file;
  auto& pairs = file.pairs;
  auto& places = file.places;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    const auto number = static_cast<int64_t>(i) + 1;
    data::check_utf8(line, path.string(), number);
    if (line.empty() || line.front() == '#') continue;
    const auto where = path.string() + ":" + std::to_string(number);
    const auto tab = line.find('\t');
    if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos) {
      throw InputError(where + ": expected 'source term<TAB>target term' (one tab)");
    }
    pairs.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    places.push_back(where);
  }
  return file;
}

Glossary Glossary::from_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                              const data::Tokenizer& tokenizer, const std::vector<std::string>& places) {
  Glossary glossary;
  // A piece continues the word before it unless it begins a word (SentencePiece's mark) or with a
  // character that is neither a letter nor a digit (punctuation after a word: "duck" in "duck.").
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const auto piece = tokenizer.piece(id);
    auto first = piece.empty() ? 0 : static_cast<unsigned char>(piece.front());
    if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece.back() == '>' &&
        std::isxdigit(static_cast<unsigned char>(piece[3])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(piece[4])) != 0) {  // a byte piece: its byte
      first = static_cast<unsigned char>(std::stoi(piece.substr(3, 2), nullptr, 16));
    }
    const bool word_character = std::isalnum(first) != 0 || first >= 0x80;
    glossary.continues_word_.push_back(piece.rfind(kWordStart, 0) != 0 && word_character);
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [source, target] = pairs[i];
    const auto where = i < places.size() ? places[i] + ": " : std::string();
    auto source_ids = tokenizer.encode(source);
    auto target_ids = tokenizer.encode_target(target);
    if (source_ids.empty() || target_ids.empty()) {
      throw InputError(where + "the term pair '" + source + "' / '" + target + "' has an empty side");
    }
    const auto unknown = [](const std::vector<int>& ids) {
      return std::find(ids.begin(), ids.end(), data::Tokenizer::kUnk) != ids.end();
    };
    if (unknown(source_ids) || unknown(target_ids)) {
      throw InputError(where + "the term pair '" + source + "' / '" + target +
                       "' has characters the model's vocabulary lacks");
    }
    const bool known = std::any_of(glossary.terms_.begin(), glossary.terms_.end(),
                                   [&](const Term& term) { return term.source == source_ids; });
    if (!known) glossary.terms_.push_back(Term{std::move(source_ids), std::move(target_ids)});
  }
  std::stable_sort(glossary.terms_.begin(), glossary.terms_.end(),
                   [](const Term& a, const Term& b) { return a.source.size() > b.source.size(); });
  return glossary;
}

Constraints Glossary::constraints(const std::vector<int>& source) const {
  Constraints found;
  std::vector<bool> taken(source.size(), false);  // pieces of a term matched already
  // A match ends where a word ends: at the last piece, or before a piece that does not continue it.
  const auto ends_word = [&](size_t end) {
    if (end == source.size()) return true;
    const auto id = static_cast<size_t>(source[end]);
    return id >= continues_word_.size() || !continues_word_[id];
  };
  for (const auto& term : terms_) {
    const auto length = term.source.size();
    for (size_t at = 0; at + length <= source.size(); ++at) {
      if (!std::equal(term.source.begin(), term.source.end(), source.begin() + static_cast<std::ptrdiff_t>(at)) ||
          !ends_word(at + length)) {
        continue;
      }
      const auto begin = taken.begin() + static_cast<std::ptrdiff_t>(at);
      if (std::any_of(begin, begin + static_cast<std::ptrdiff_t>(length), [](bool t) { return t; })) continue;
      std::fill(begin, begin + static_cast<std::ptrdiff_t>(length), true);
      if (std::find(found.begin(), found.end(), term.target) == found.end()) found.push_back(term.target);
      break;
    }
  }
  return found;
}

size_t constraint_pieces(const Constraints& constraints) {
  size_t pieces = 0;
  for (const auto& constraint : constraints) pieces += constraint.size();
  return pieces;
}

int constrained_beam(int beam, const Constraints& constraints) {
  const size_t pieces = constraint_pieces(constraints);
  if (pieces == 0) return beam;
  return std::max(beam, static_cast<int>(std::min<size_t>(pieces + 1, kMostConstrainedBeam)));
}

}  // namespace trafo::decode
