#include "trafo/inference/pages.h"

#include <stdexcept>

#include "trafo/errors.h"
#include "trafo/inference/translation.h"
#include "trafo/markup/html.h"

namespace trafo::inference {

const size_t Pages::kMaxBytes = markup::HtmlPage::kMaxBytes;

Pages::Pages(const std::vector<std::string>& pages) {
  for (size_t i = 0; i < pages.size(); ++i) {
    try {
      pages_.push_back(std::make_unique<markup::HtmlPage>(pages[i]));
    } catch (const InputError& e) {
      if (pages.size() == 1) throw;
      throw InputError("page " + std::to_string(i + 1) + ": " + e.what());
    }
    const auto& segments = pages_.back()->segments();
    lines_.insert(lines_.end(), segments.begin(), segments.end());
  }
}

Pages::~Pages() = default;
Pages::Pages(Pages&&) noexcept = default;
Pages& Pages::operator=(Pages&&) noexcept = default;

std::vector<std::string> Pages::render(const std::vector<Translated>& translated) const {
  if (translated.size() != lines_.size()) throw std::invalid_argument("Pages::render: one translation per run");
  std::vector<std::string> rendered;
  size_t at = 0;
  for (const auto& page : pages_) {
    std::vector<std::string> texts;
    std::vector<markup::Links> links;
    for (size_t i = 0; i < page->segments().size(); ++i, ++at) {
      texts.push_back(translated[at].hypotheses.front().text);
      links.push_back(translated[at].alignment);
    }
    rendered.push_back(page->render(texts, links));
  }
  return rendered;
}

}  // namespace trafo::inference
