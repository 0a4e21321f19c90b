// HTML pages from arbitrary bytes: markup::HtmlPage parses them, and renders them with made-up
// translations and word links. Input: one option byte, then the page.
// Invariant: whatever the links, the rendered page has exactly the tags, comments and kept content
// of the page as parsed: the same multiset of stretches from a '<' to the next '>' as
// render_source() (translated text is escaped, so its words hold neither).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "trafo/decode/output_text.h"
#include "trafo/markup/html.h"

using namespace trafo;

namespace {

// Each stretch from a '<' to the next '>', sorted.
std::vector<std::string_view> tags_of(std::string_view page) {
  std::vector<std::string_view> tags;
  for (size_t at = page.find('<'); at != std::string_view::npos; at = page.find('<', at + 1)) {
    const size_t end = page.find('>', at);
    tags.push_back(page.substr(at, end == std::string_view::npos ? std::string_view::npos : end + 1 - at));
  }
  std::sort(tags.begin(), tags.end());
  return tags;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t option = data[0];
  const std::string_view html(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::expect_trafo_errors("HtmlPage", [&] {
    const markup::HtmlPage page(html);
    const auto source = page.render_source();
    std::vector<std::string> translations;
    std::vector<markup::Links> links;
    uint32_t state = 2166136261u ^ option;
    const auto next = [&state] {
      state = state * 16777619u + 12345u;
      return state >> 8;
    };
    for (const auto& segment : page.segments()) {
      const int source_words = decode::count_words(segment);
      const int target_words = static_cast<int>(next() % (static_cast<uint32_t>(source_words) + 3));
      std::string text;
      for (int w = 0; w < target_words; ++w) text += (w ? " " : "") + std::string(w % 5 == 4 ? "a&<b>" : "w");
      markup::Links made;
      const int count = static_cast<int>(next() % 8);
      for (int k = 0; k < count; ++k) {
        made.emplace_back(static_cast<int>(next() % (static_cast<uint32_t>(source_words) + 2)) - 1,
                          static_cast<int>(next() % (static_cast<uint32_t>(target_words) + 2)) - 1);
      }
      translations.push_back(text);
      links.push_back(made);
    }
    const auto out = page.render(translations, links);
    fuzz::check(tags_of(out) == tags_of(source), "the rendered page has other tags than the page as parsed");
  });
  return 0;
}
