// The parsed page (markup/html.h): libxml2's tree copied into plain nodes, what kind of content
// each element is, and how nodes are written back.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trafo::markup::detail {

// A node of the parsed page, copied out of libxml2's tree.
struct Node {
  enum class Kind { kElement, kText, kComment, kVerbatim };
  Kind kind = Kind::kText;
  std::string name;  // an element's tag, lower case
  std::vector<std::pair<std::string, std::optional<std::string>>> attributes;  // no value: a bare attribute
  std::string text;  // text (entities decoded), a comment's content, or markup written as it is (doctype)
  std::vector<Node> children;
};

// The nodes of `html`: a document's, or a fragment's (parsed inside a <body>). InputError as
// HtmlPage's constructor says.
std::vector<Node> parse(std::string_view html);

// Elements without an end tag.
bool is_void(std::string_view name);
// Elements whose text is written as it is, not escaped (script, style).
bool is_raw_text(std::string_view name);
// Inline elements that stand at a point of the text (br, img, input, wbr).
bool is_point(std::string_view name);
// Content written back as read, never translated.
bool is_kept(const Node& element);
// Whether `node` belongs to a run: text, a comment, or an inline element with inline content only.
bool in_run(const Node& node);
bool is_space(char c);

// `text` with &, <, > (and " in an attribute) escaped, and U+00A0 as &nbsp;.
void escape(std::string_view text, std::string& out, bool in_attribute);
void open_tag(const Node& element, std::string& out);
void close_tag(const Node& element, std::string& out);
// `node` and everything in it, as parsed.
void write(const Node& node, std::string& out, bool raw = false);

}  // namespace trafo::markup::detail
