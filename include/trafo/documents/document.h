// Documents in, documents out: a file of text, HTML, Word (.docx), PowerPoint (.pptx) or
// OpenDocument (.odt, .odp) read into what a model translates, and written back with the
// translations in place and every other part as it was (docs/guide-translating.md "Documents").
//
// - .txt: the file's lines. .html, .htm: the file is one page (markup/html.h).
// - .docx, .pptx, .odt, .odp: zip archives of XML. The parts that hold text (a Word document's
//   body, headers, footers, footnotes, endnotes and comments; a presentation's slides and notes;
//   an OpenDocument's content and its styles, where headers and footers live) become HTML pages:
//   each paragraph a <p>, each run of other formatting and each link a <span>, and what is not
//   text (tabs, breaks, pictures, fields, bookmarks, notes) an <img> at its place. The pages are
//   translated as any page is, their inline tags placed by word alignment; each paragraph is then
//   rebuilt from its translated page, its own properties first as they were, and every other entry
//   of the archive is copied as it was: its compressed bytes, its method, its order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trafo/errors.h"

namespace trafo::documents {

enum class Format { kText, kHtml, kDocx, kPptx, kOdt, kOdp };

// The format of a file named `name`, by its extension (any case); InputError naming the
// extensions taken for another.
Format format_of(std::string_view name);
// Whether format_of takes `name`.
bool extension_known(std::string_view name);
// Every extension format_of takes, with its dot: ".txt", ".html", ...
const std::vector<std::string>& extensions();

// What a document may hold; past them it is refused (a zip bomb unpacks past max_unpacked_bytes).
struct Limits {
  int64_t max_file_bytes = int64_t{64} << 20;       // the file as given
  int64_t max_entries = 10000;                      // entries of an archive
  int64_t max_unpacked_bytes = int64_t{512} << 20;  // an archive's entries unpacked, in all
};

// Refused for its size: the file, or its archive's entries unpacked (a zip bomb), or their count.
struct DocumentTooLarge : InputError {
  using InputError::InputError;
};

class Document {
 public:
  // InputError naming the cause: a file over the limits; an archive that is not a zip, is
  // damaged, has too many entries or would unpack past the limit; one without its format's main
  // part, or whose XML does not parse; text or HTML that is not UTF-8.
  Document(Format format, std::string bytes, const Limits& limits = {});
  ~Document();
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;

  Format format() const { return format_; }
  // kText: the lines of the file, to translate as `trafo translate` translates lines; else empty.
  const std::vector<std::string>& lines() const { return lines_; }
  // The other formats: HTML pages whose runs are the document's text (kHtml: the file itself).
  const std::vector<std::string>& pages() const { return pages_; }

  // The file with `translated` in place of lines() (kText) or of pages() (each page as translated,
  // inference::Pages::render); std::invalid_argument for a count that does not match.
  std::string write(const std::vector<std::string>& translated) const;

 private:
  struct Archive;
  Format format_;
  std::string bytes_;
  std::vector<std::string> lines_, pages_;
  std::string line_end_;        // kText: "\n" or "\r\n", as the file has it
  bool final_line_end_ = true;  // kText: whether the file ends with a line end
  std::unique_ptr<Archive> archive_;
};

}  // namespace trafo::documents
