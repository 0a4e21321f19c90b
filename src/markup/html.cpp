// HtmlPage: the page's blocks and runs walked in document order. The tree and how it is written
// are html_tree.h's; one run's words and tags, html_runs.h's.
#include "trafo/markup/html.h"

#include <stdexcept>

#include "html_runs.h"
#include "html_tree.h"

namespace trafo::markup {

using detail::close_tag;
using detail::in_run;
using detail::is_kept;
using detail::is_raw_text;
using detail::Node;
using detail::open_tag;
using detail::split_words;
using detail::write;

struct HtmlPage::Tree {
  std::vector<Node> nodes;
};

namespace {

// Goes through a page's blocks and runs in document order: collecting each run's text, or writing
// the page with each run's translation.
class Walk {
 public:
  // Collecting.
  explicit Walk(std::vector<std::string>& segments) : segments_(&segments) {}
  // Writing.
  Walk(std::string& out, const std::vector<std::string>* translations, const std::vector<Links>* links)
      : out_(&out), translations_(translations), links_(links) {}

  void blocks(const std::vector<Node>& nodes) {
    size_t i = 0;
    while (i < nodes.size()) {
      if (in_run(nodes[i])) {
        size_t j = i;
        while (j < nodes.size() && in_run(nodes[j])) ++j;
        run(nodes, i, j);
        i = j;
        continue;
      }
      const Node& node = nodes[i++];
      if (node.kind != Node::Kind::kElement || is_kept(node) || is_raw_text(node.name)) {
        if (out_) write(node, *out_);
        continue;
      }
      if (out_) open_tag(node, *out_);
      blocks(node.children);
      if (out_) close_tag(node, *out_);
    }
  }

 private:
  void run(const std::vector<Node>& nodes, size_t from, size_t to) {
    auto run = detail::read_run(nodes, from, to);
    if (run.text.empty()) {
      if (out_) {
        for (size_t i = from; i < to; ++i) write(nodes[i], *out_);
      }
      return;
    }
    if (segments_) {
      segments_->push_back(run.text);
      return;
    }
    if (!translations_) {  // the page as parsed
      for (size_t i = from; i < to; ++i) write(nodes[i], *out_);
      return;
    }
    detail::write_run(run, (*translations_)[next_], (*links_)[next_], *out_);
    ++next_;
  }

  std::vector<std::string>* segments_ = nullptr;
  std::string* out_ = nullptr;
  const std::vector<std::string>* translations_ = nullptr;
  const std::vector<Links>* links_ = nullptr;
  size_t next_ = 0;
};

}  // namespace

HtmlPage::HtmlPage(std::string_view html) : tree_(std::make_unique<Tree>()) {
  tree_->nodes = detail::parse(html);
  Walk(segments_).blocks(tree_->nodes);
}

HtmlPage::~HtmlPage() = default;
HtmlPage::HtmlPage(HtmlPage&&) noexcept = default;
HtmlPage& HtmlPage::operator=(HtmlPage&&) noexcept = default;

const std::vector<std::string>& HtmlPage::segments() const { return segments_; }

std::string HtmlPage::render(const std::vector<std::string>& translations, const std::vector<Links>& links) const {
  if (translations.size() != segments_.size() || links.size() != segments_.size()) {
    throw std::invalid_argument("HtmlPage::render: one translation and one alignment per segment");
  }
  std::string out;
  Walk(out, &translations, &links).blocks(tree_->nodes);
  return out;
}

std::string HtmlPage::render_source() const {
  std::string out;
  Walk(out, nullptr, nullptr).blocks(tree_->nodes);
  return out;
}

void escape_text(std::string_view text, std::string& out) { detail::escape(text, out, /*in_attribute=*/false); }

Links parse_pharaoh(std::string_view text) {
  Links links;
  for (const auto pair : split_words(text)) {
    const size_t dash = pair.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == pair.size()) continue;
    int numbers[2] = {0, 0};
    bool ok = true;
    const std::string_view parts[2] = {pair.substr(0, dash), pair.substr(dash + 1)};
    for (int k = 0; k < 2 && ok; ++k) {
      ok = parts[k].size() <= 6;
      for (size_t i = 0; ok && i < parts[k].size(); ++i) {
        ok = parts[k][i] >= '0' && parts[k][i] <= '9';
        numbers[k] = numbers[k] * 10 + (parts[k][i] - '0');
      }
    }
    if (ok) links.emplace_back(numbers[0], numbers[1]);
  }
  return links;
}

}  // namespace trafo::markup