// Case augmentation: the capitalised variants of a training pair that `--all-caps-every` and
// `--title-case-every` add to a corpus (CorpusOptions), so that a model trained mostly on text in
// sentence case also translates "ENTRY" and "Range" rather than copying them. Marian's
// --all-caps-every and --english-title-case-every do the same on the fly; trafo adds the variants
// once, into the token cache, beside the pairs they come from.
//
// Only plain words change: a run of letters (any script), with apostrophes and hyphens inside and
// brackets, quotes and punctuation around. Placeholders (%s, {name}), options (--quiet), paths,
// identifiers with digits or underscores (KP_Left, _First) and markup stay as written, on both
// sides alike, so that a variant keeps what a translation must copy.
#pragma once

#include <string>
#include <string_view>

namespace trafo::data {

// Every plain word's letters in capitals: "Choose an entry" -> "CHOOSE AN ENTRY", "entrée" ->
// "ENTRÉE". Letters beyond ASCII follow the C.UTF-8 locale's case table (ASCII only without it).
std::string all_caps(std::string_view text);

// An English title: every plain word capitalised but the small ones (a, an, and, as, at, by, for,
// from, in, of, on, or, the, to, with) after the first: "owner of the file" -> "Owner of the File".
std::string english_title_case(std::string_view text);

// The first word capitalised when it is a plain word: "propriétaire du fichier" -> "Propriétaire
// du fichier" (the target side of a title-cased pair: titles in most languages are sentence case).
std::string sentence_case(std::string_view text);

}  // namespace trafo::data
