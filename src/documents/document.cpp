#include "trafo/documents/document.h"

#include <utf8.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <stdexcept>
#include <utility>

#include "trafo/errors.h"
#include "xml_text.h"
#include "zip_archive.h"

namespace trafo::documents {

using detail::Markup;

namespace {

const std::vector<std::pair<std::string, Format>>& known() {
  static const std::vector<std::pair<std::string, Format>> formats = {
      {".txt", Format::kText},  {".html", Format::kHtml}, {".htm", Format::kHtml}, {".docx", Format::kDocx},
      {".pptx", Format::kPptx}, {".odt", Format::kOdt},   {".odp", Format::kOdp}};
  return formats;
}

// A format's main part (without it the archive is not of that format), and the parts with text.
struct Kind {
  const char* main_part;
  const char* name;
  Markup markup;
  std::regex parts;
};

const Kind& kind_of(Format format) {
  static const Kind word{"word/document.xml", "Word document", Markup::kWord,
                         std::regex(R"(word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml)")};
  static const Kind slides{"ppt/presentation.xml", "PowerPoint presentation", Markup::kDrawing,
                           std::regex(R"(ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml)")};
  static const Kind open_document{"content.xml", "OpenDocument file", Markup::kOpenDocument,
                                  std::regex(R"(content\.xml|styles\.xml)")};
  return format == Format::kDocx ? word : format == Format::kPptx ? slides : open_document;
}

}  // namespace

struct Document::Archive {
  std::string bytes;  // what zip reads from
  std::unique_ptr<detail::ZipArchive> zip;
  std::vector<std::string> parts;  // the entries with text, one page each
};

namespace {

// `name`'s extension, lower case, with its dot ("" for none).
std::string extension_of(std::string_view name) {
  const size_t dot = name.rfind('.');
  const size_t slash = name.rfind('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && slash > dot)) return "";
  std::string extension(name.substr(dot));
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

}  // namespace

bool extension_known(std::string_view name) {
  const auto extension = extension_of(name);
  return std::any_of(known().begin(), known().end(), [&](const auto& entry) { return entry.first == extension; });
}

Format format_of(std::string_view name) {
  const auto extension = extension_of(name);
  for (const auto& [known_extension, format] : known()) {
    if (extension == known_extension) return format;
  }
  std::string taken;
  for (const auto& known_extension : extensions()) taken += (taken.empty() ? "" : ", ") + known_extension;
  throw InputError(std::string(name) + ": " + (extension.empty() ? "no extension" : "the extension " + extension) +
                   " is not a document trafo translates (" + taken + ")");
}

const std::vector<std::string>& extensions() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> names;
    for (const auto& entry : known()) names.push_back(entry.first);
    return names;
  }();
  return all;
}

Document::Document(Format format, std::string bytes, const Limits& limits) : format_(format) {
  if (static_cast<int64_t>(bytes.size()) > limits.max_file_bytes) {
    throw DocumentTooLarge("the file is " + std::to_string(bytes.size()) + " bytes; at most " +
                     std::to_string(limits.max_file_bytes) + " are taken");
  }
  if (format == Format::kText) {
    if (!utf8::is_valid(bytes.begin(), bytes.end())) throw InputError("the text file is not valid UTF-8");
    std::string_view text(bytes);
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a byte order mark
    line_end_ = text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      std::string line(text.substr(at, end - at));
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines_.push_back(std::move(line));
      at = end + 1;
    }
    final_line_end_ = text.empty() || text.back() == '\n';
    bytes_ = std::move(bytes);
    return;
  }
  if (format == Format::kHtml) {
    pages_.push_back(std::move(bytes));
    return;
  }
  const Kind& kind = kind_of(format);
  archive_ = std::make_unique<Archive>();
  archive_->bytes = std::move(bytes);
  archive_->zip = std::make_unique<detail::ZipArchive>(archive_->bytes, limits, std::string("the ") + kind.name);
  if (!archive_->zip->has(kind.main_part)) {
    throw InputError(std::string("the file has no ") + kind.main_part + ": not a " + kind.name);
  }
  for (const auto& name : archive_->zip->names()) {
    if (!std::regex_match(name, kind.parts)) continue;
    archive_->parts.push_back(name);
    pages_.push_back(detail::page_of(archive_->zip->read(name), kind.markup, name));
  }
}

Document::~Document() = default;
Document::Document(Document&&) noexcept = default;
Document& Document::operator=(Document&&) noexcept = default;

std::string Document::write(const std::vector<std::string>& translated) const {
  if (format_ == Format::kText) {
    if (translated.size() != lines_.size()) throw std::invalid_argument("Document::write: one translation per line");
    std::string out = bytes_.substr(0, 3) == "\xEF\xBB\xBF" ? bytes_.substr(0, 3) : "";
    for (size_t i = 0; i < translated.size(); ++i) {
      out += translated[i];
      if (i + 1 < translated.size() || final_line_end_) out += line_end_;
    }
    return out;
  }
  if (translated.size() != pages_.size()) throw std::invalid_argument("Document::write: one translation per page");
  if (format_ == Format::kHtml) return translated.front();
  const Kind& kind = kind_of(format_);
  std::map<std::string, std::string> replaced;
  for (size_t i = 0; i < archive_->parts.size(); ++i) {
    const auto& name = archive_->parts[i];
    replaced[name] = detail::rebuild(archive_->zip->read(name), kind.markup, translated[i], name);
  }
  return archive_->zip->write(replaced);
}

}  // namespace trafo::documents
