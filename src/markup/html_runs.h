// One run of a page (markup/html.h): its words and inline tags read from the page's nodes, and
// the run written again around a translation, its tags placed by word links.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "html_tree.h"
#include "trafo/markup/html.h"

namespace trafo::markup::detail {

// A tag of a run: an inline element around words, or a point (an element or comment at one place).
struct Mark {
  const Node* node = nullptr;
  bool point = false;
  size_t begin = 0, end = 0;  // characters of the run's text
  int order = 0;              // place in the source
  bool space_before = false, space_after = false;  // a point: whitespace around it in the source
  int point_id = -1;
  // An inline element that begins or ends inside a word ("<a>link</a>."): the punctuation of that
  // word outside it, kept outside it in the translation where the target word has it too.
  std::string lead_out, trail_out;
  int t0 = 0, t1 = 0;         // target words [t0, t1)
  std::vector<Mark> children;
};

// A run read from the page: its text (words, whitespace collapsed to single spaces), the
// whitespace before its first word or point and after its last, and its tags.
struct Run {
  std::string text, lead, tail;
  std::vector<Mark> marks;
};

// The run of nodes[from, to) (all in_run).
Run read_run(const std::vector<Node>& nodes, size_t from, size_t to);

// Appends `run` with `translation` (words split at spaces) for its text, its tags placed by `links`.
void write_run(Run& run, std::string_view translation, const Links& links, std::string& out);

// Words split at spaces and tabs, as alignments count them.
std::vector<std::string_view> split_words(std::string_view text);

}  // namespace trafo::markup::detail
