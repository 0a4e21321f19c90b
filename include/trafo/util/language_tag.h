// Target-language codes as models of several target languages read them: ">>fr<<" before the source
// asks for French (OPUS-MT's convention, which trafo trains with too). One piece, never cut.
#pragma once

#include <string>
#include <string_view>

namespace trafo::util {

// ">>fr<<" for "fr".
inline std::string language_tag(std::string_view code) { return ">>" + std::string(code) + "<<"; }

// "fr" for ">>fr<<"; "" for a piece that is not a language code.
inline std::string_view tag_language(std::string_view piece) {
  if (piece.size() <= 4 || piece.substr(0, 2) != ">>" || piece.substr(piece.size() - 2) != "<<") return {};
  return piece.substr(2, piece.size() - 4);
}

// The code `text` begins with, ">>" up to the first "<<" (">>fr<<" of ">>fr<< Hello"); "" for text
// that begins with none.
inline std::string_view leading_tag(std::string_view text) {
  if (text.substr(0, 2) != ">>") return {};
  const auto end = text.find("<<", 2);
  return end == std::string_view::npos ? std::string_view() : text.substr(0, end + 2);
}

}  // namespace trafo::util
