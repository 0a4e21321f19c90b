// HTML pages as the engine translates them: each page cut into the runs of text a model translates
// (markup/html.h), one line each, and put back around their translations, each run's inline tags
// placed by its word links. What `translate --format html` and a served `format: "html"` share.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "trafo/inference/alignment.h"

namespace trafo::markup {
class HtmlPage;
}

namespace trafo::inference {

struct Translated;

class Pages {
 public:
  // Parses each page (a document or a fragment); InputError as markup::HtmlPage has it, the page
  // named by its index where there are several.
  explicit Pages(const std::vector<std::string>& pages);
  ~Pages();
  Pages(Pages&&) noexcept;
  Pages& operator=(Pages&&) noexcept;

  static const size_t kMaxBytes;  // a page's limit (markup::HtmlPage::kMaxBytes)

  // Every page's runs, in order: the lines to translate.
  const std::vector<std::string>& lines() const { return lines_; }
  // Each page with its runs' translations (`translated[i]` for lines()[i]: the best hypothesis and
  // its word links).
  std::vector<std::string> render(const std::vector<Translated>& translated) const;

 private:
  std::vector<std::unique_ptr<markup::HtmlPage>> pages_;
  std::vector<std::string> lines_;
};

}  // namespace trafo::inference
