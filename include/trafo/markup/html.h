// HTML in, HTML out: a page (a document or a fragment) is cut into the runs of text a model
// translates, and put back together with each run's translation, its inline tags placed around the
// target words aligned to the words they wrapped (docs/guide-translating.md "HTML").
//
// - Parsing is libxml2's HTML parser: malformed markup is repaired as that parser does, and the
//   page's tags are the repaired tree's.
// - A run is a block element's inline content: text, inline elements (`b`, `i`, `em`, `strong`,
//   `a`, `span`, `sup`, `sub`, ...), points (`br`, `img`, `wbr`, `input`, comments) and inline
//   content that is not translated. Block elements (`p`, `div`, `li`, `td`, `h1`, ...) end runs.
// - Not translated, and written back as read: `script`, `style`, `code`, `pre`, `textarea`, `svg`,
//   `math`, and any element with `translate="no"` or the class `notranslate`. Inline ones stay in
//   their run as points; attributes are never translated.
// - A run's text is its words, whitespace collapsed to single spaces: one line to translate.
// - The output keeps every element, comment and attribute of the parsed tree exactly once, in a
//   valid nesting, whatever the alignment says: alignments decide only where inline tags go.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trafo::markup {

using Links = std::vector<std::pair<int, int>>;  // (source word, target word), 0-based

class HtmlPage {
 public:
  // Throws trafo::InputError for input over kMaxBytes or not UTF-8, nests elements more than kMaxDepth deep
  // (libxml2 stops reading at 256), or gives an element more than kMaxAttributes attributes
  // (libxml2 checks them for duplicates in quadratic time); any other markup is taken as the
  // parser repairs it. A leading byte order mark is dropped.
  explicit HtmlPage(std::string_view html);
  ~HtmlPage();
  HtmlPage(HtmlPage&&) noexcept;
  HtmlPage& operator=(HtmlPage&&) noexcept;

  static constexpr size_t kMaxBytes = size_t{256} << 20;  // no text node is cut below it
  static constexpr int kMaxDepth = 200;
  static constexpr int kMaxAttributes = 1000;

  // The text of each run with words, in document order: one line each, words split at spaces.
  const std::vector<std::string>& segments() const;

  // The page with run i's text replaced by `translations[i]` (words split at spaces), its inline
  // tags placed by `links[i]`. Both hold one entry per segment (std::invalid_argument otherwise);
  // links outside the words are ignored.
  std::string render(const std::vector<std::string>& translations, const std::vector<Links>& links) const;

  // The page as parsed, nothing translated.
  std::string render_source() const;

 private:
  struct Tree;
  std::unique_ptr<Tree> tree_;
  std::vector<std::string> segments_;
};

// Appends `text` as HTML text: &, < and > escaped, U+00A0 as &nbsp;.
void escape_text(std::string_view text, std::string& out);

// Pharaoh links, "0-0 1-2 ..."; pairs that do not parse are skipped.
Links parse_pharaoh(std::string_view text);

}  // namespace trafo::markup
