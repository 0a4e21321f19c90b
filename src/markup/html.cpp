#include "trafo/markup/html.h"

#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <utf8.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "trafo/errors.h"

namespace trafo::markup {
namespace {

// A node of the parsed page, copied out of libxml2's tree.
struct Node {
  enum class Kind { kElement, kText, kComment, kVerbatim };
  Kind kind = Kind::kText;
  std::string name;  // an element's tag, lower case
  std::vector<std::pair<std::string, std::optional<std::string>>> attributes;  // no value: a bare attribute
  std::string text;  // text (entities decoded), a comment's content, or markup written as it is (doctype)
  std::vector<Node> children;
};

std::string lower(std::string text) {
  for (auto& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_void(std::string_view name) {
  return one_of(name, {"area", "base", "basefont", "br", "col", "embed", "frame", "hr", "img", "input", "isindex",
                       "keygen", "link", "meta", "param", "source", "track", "wbr"});
}

// Elements whose text is written as it is, not escaped.
bool is_raw_text(std::string_view name) { return one_of(name, {"script", "style"}); }

// Inline elements that wrap words: their tags are placed around the words' translation.
bool wraps_words(std::string_view name) {
  return one_of(name, {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i", "ins",
                       "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup",
                       "time", "tt", "u", "var"});
}

// Inline elements that stand at a point of the text.
bool is_point(std::string_view name) { return one_of(name, {"br", "img", "input", "wbr"}); }

// Inline elements whose content is never translated.
bool is_kept_inline(std::string_view name) { return one_of(name, {"code", "math", "script", "style", "svg", "textarea"}); }

std::optional<std::string> attribute(const Node& element, std::string_view name) {
  for (const auto& [key, value] : element.attributes) {
    if (key == name) return value.value_or("");
  }
  return std::nullopt;
}

// Content that is written back as read: `pre` and the kept inline elements, and anything marked
// translate="no" or with the class notranslate.
bool is_kept(const Node& element) {
  if (is_kept_inline(element.name) || element.name == "pre") return true;
  const auto translate = attribute(element, "translate");
  if (translate && lower(*translate) == "no") return true;
  const auto classes = attribute(element, "class");
  if (!classes) return false;
  size_t at = 0;
  while (at < classes->size()) {
    const size_t start = classes->find_first_not_of(" \t\n\r\f", at);
    if (start == std::string::npos) break;
    const size_t end = std::min(classes->size(), classes->find_first_of(" \t\n\r\f", start));
    if (std::string_view(*classes).substr(start, end - start) == "notranslate") return true;
    at = end;
  }
  return false;
}

// Whether `node` belongs to a run: text, a comment, or an inline element with inline content only.
bool in_run(const Node& node) {
  if (node.kind == Node::Kind::kText || node.kind == Node::Kind::kComment) return true;
  if (node.kind != Node::Kind::kElement) return false;
  if (is_point(node.name)) return true;
  if (is_kept(node)) return wraps_words(node.name) || is_kept_inline(node.name);
  if (!wraps_words(node.name)) return false;
  return std::all_of(node.children.begin(), node.children.end(), in_run);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

void escape(std::string_view text, std::string& out, bool in_attribute) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"' && in_attribute) {
      out += "&quot;";
    } else if (c == '\xC2' && i + 1 < text.size() && text[i + 1] == '\xA0') {
      out += "&nbsp;";
      ++i;
    } else {
      out += c;
    }
  }
}

// HTML 4's boolean attributes, which libxml2 stores with their own name as the value.
bool is_boolean_attribute(std::string_view name) {
  return one_of(name, {"checked", "compact", "declare", "defer", "disabled", "ismap", "multiple", "nohref", "noresize",
                       "noshade", "nowrap", "readonly", "selected"});
}

void open_tag(const Node& element, std::string& out) {
  out += '<';
  out += element.name;
  for (const auto& [key, value] : element.attributes) {
    out += ' ';
    out += key;
    if (!value || (is_boolean_attribute(key) && *value == key)) continue;  // libxml2 gives disabled="disabled"
    out += "=\"";
    escape(*value, out, /*in_attribute=*/true);
    out += '"';
  }
  out += '>';
}

void close_tag(const Node& element, std::string& out) {
  if (is_void(element.name)) return;
  out += "</";
  out += element.name;
  out += '>';
}

void write(const Node& node, std::string& out, bool raw = false) {
  switch (node.kind) {
    case Node::Kind::kText:
      if (raw) {
        out += node.text;
      } else {
        escape(node.text, out, false);
      }
      return;
    case Node::Kind::kComment:
      out += "<!--" + node.text + "-->";
      return;
    case Node::Kind::kVerbatim:
      out += node.text;
      return;
    case Node::Kind::kElement:
      open_tag(node, out);
      for (const auto& child : node.children) write(child, out, is_raw_text(node.name));
      close_tag(node, out);
      return;
  }
}

// ---- parsing ----

std::string owned(xmlChar* text) {
  std::string copy = text ? reinterpret_cast<const char*>(text) : "";
  if (text) xmlFree(text);
  return copy;
}

std::string chars(const xmlChar* text) { return text ? reinterpret_cast<const char*>(text) : ""; }

std::string doctype(const xmlDtd& dtd) {
  std::string out = "<!DOCTYPE " + chars(dtd.name);
  if (dtd.ExternalID) {
    out += " PUBLIC \"" + chars(dtd.ExternalID) + "\"";
    if (dtd.SystemID) out += " \"" + chars(dtd.SystemID) + "\"";
  } else if (dtd.SystemID) {
    out += " SYSTEM \"" + chars(dtd.SystemID) + "\"";
  }
  return out + ">";
}

void copy_nodes(const xmlNode* first, std::vector<Node>& out, int depth) {
  if (depth > HtmlPage::kMaxDepth) {
    throw InputError("HTML nests elements more than " + std::to_string(HtmlPage::kMaxDepth) + " deep");
  }
  for (const xmlNode* n = first; n; n = n->next) {
    Node node;
    switch (n->type) {
      case XML_ELEMENT_NODE: {
        node.kind = Node::Kind::kElement;
        node.name = lower(chars(n->name));
        for (const xmlAttr* a = n->properties; a; a = a->next) {
          std::string key = (a->ns && a->ns->prefix ? chars(a->ns->prefix) + ":" : "") + chars(a->name);
          std::optional<std::string> value;
          if (a->children) value = owned(xmlNodeListGetString(n->doc, a->children, 1));
          node.attributes.emplace_back(std::move(key), std::move(value));
        }
        copy_nodes(n->children, node.children, depth + 1);
        if (is_void(node.name) && !node.children.empty()) {
          // libxml2 2.9 does not know wbr, source, track, keygen or embed as void: what follows them
          // in their parent became their content. It goes back after them.
          auto following = std::move(node.children);
          node.children.clear();
          out.push_back(std::move(node));
          for (auto& child : following) out.push_back(std::move(child));
          continue;
        }
        break;
      }
      case XML_TEXT_NODE:
      case XML_CDATA_SECTION_NODE:
        if (!out.empty() && out.back().kind == Node::Kind::kText) {
          out.back().text += chars(n->content);
          continue;
        }
        node.text = chars(n->content);
        break;
      case XML_COMMENT_NODE:
        node.kind = Node::Kind::kComment;
        node.text = chars(n->content);
        break;
      case XML_PI_NODE:
        node.kind = Node::Kind::kVerbatim;
        node.text = "<?" + chars(n->name) + (n->content ? " " + chars(n->content) : "") + ">";
        break;
      case XML_DTD_NODE:
        node.kind = Node::Kind::kVerbatim;
        node.text = doctype(*reinterpret_cast<const xmlDtd*>(n));
        break;
      default:
        continue;
    }
    out.push_back(std::move(node));
  }
}

// Whether `html` names the tag `name` ("<name" then a space, '>' or '/'), in any case.
bool has_tag(const std::string& lowered, std::string_view name) {
  for (size_t at = lowered.find(name); at != std::string::npos; at = lowered.find(name, at + 1)) {
    const size_t after = at + name.size();
    if (after == lowered.size() || is_space(lowered[after]) || lowered[after] == '>' || lowered[after] == '/') return true;
  }
  return false;
}

// A whole document (a doctype, or an html, head or body tag), or a fragment of a body.
bool is_document(std::string_view html) {
  const std::string text = lower(std::string(html));
  if (text.find("<!doctype") != std::string::npos) return true;
  for (const char* tag : {"<html", "</html", "<head", "</head", "<body", "</body"}) {
    if (has_tag(text, tag)) return true;
  }
  return false;
}

// libxml2 checks each attribute against the element's others: a tag with very many costs quadratic
// time. Counts the attributes of each tag, as names outside quotes.
void check_attributes(std::string_view html) {
  size_t at = 0;
  while ((at = html.find('<', at)) != std::string_view::npos) {
    ++at;
    if (at >= html.size() || !std::isalpha(static_cast<unsigned char>(html[at]))) continue;
    int attributes = 0;
    char quote = 0;
    bool in_word = true;  // the tag's name
    for (; at < html.size(); ++at) {
      const char c = html[at];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        break;
      } else if (is_space(c) || c == '=') {
        in_word = false;
      } else if (!in_word) {
        in_word = true;
        if (++attributes > HtmlPage::kMaxAttributes) {
          throw InputError("an element of the HTML has more than " + std::to_string(HtmlPage::kMaxAttributes) +
                           " attributes");
        }
      }
    }
  }
}

std::vector<Node> parse(std::string_view html) {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
  if (!utf8::is_valid(html.begin(), html.end())) throw InputError("the HTML is not valid UTF-8");
  if (html.substr(0, 3) == "\xEF\xBB\xBF") html.remove_prefix(3);  // a byte order mark
  check_attributes(html);
  const bool document = is_document(html);
  // A fragment is parsed inside <body>, so that the parser adds no element around its text.
  const std::string text = document ? std::string(html) : "<html><body>" + std::string(html) + "</body></html>";
  if (text.size() > static_cast<size_t>(INT_MAX)) throw InputError("the HTML is larger than 2 GiB");
  // RECOVER: a script's text ends at </script> only; NODEFDTD: no doctype the page did not have.
  const int options = HTML_PARSE_RECOVER | HTML_PARSE_NODEFDTD | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                      HTML_PARSE_NONET | HTML_PARSE_NOIMPLIED;
  std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)> doc(
      htmlReadMemory(text.data(), static_cast<int>(text.size()), nullptr, "UTF-8", options), &xmlFreeDoc);
  std::vector<Node> nodes;
  if (!doc) return nodes;
  const xmlNode* first = doc->children;
  if (!document) {  // the children of the <body> we put around the fragment
    first = nullptr;
    const xmlNode* root = xmlDocGetRootElement(doc.get());
    for (const xmlNode* n = root ? root->children : nullptr; n && !first; n = n->next) {
      if (n->type == XML_ELEMENT_NODE && chars(n->name) == "body") first = n->children;
    }
  }
  copy_nodes(first, nodes, 0);
  return nodes;
}

// ---- runs ----

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

// A run's words, whitespace collapsed, and its tags. Events are word characters and points: the
// whitespace between two events says whether a point stood apart from the words around it.
struct RunText {
  std::string text;
  std::string lead, tail;  // whitespace before the first event and after the last, as written
  std::vector<Mark> marks;

  void add(const Node& node, std::vector<Mark>& into) {
    if (node.kind == Node::Kind::kText) {
      add_text(node.text);
      return;
    }
    Mark mark;
    mark.node = &node;
    mark.order = marks_seen_++;
    mark.point = node.kind != Node::Kind::kElement || is_point(node.name) || is_kept(node);
    mark.begin = text.size();
    if (mark.point) {
      mark.space_before = space_since_event_;
      event();
      mark.point_id = static_cast<int>(space_after_.size());
      space_after_.push_back(false);
      awaiting_ = mark.point_id;
      if (node.kind == Node::Kind::kElement && node.name == "br") space_pending_ = !text.empty();  // it parts words
    } else {
      for (const auto& child : node.children) add(child, mark.children);
    }
    mark.end = mark.point ? mark.begin : text.size();
    into.push_back(std::move(mark));
  }

  // Sets each point's space_after, once the run is read.
  void finish() { set_space_after(marks); }

 private:
  void add_text(std::string_view s) {
    for (const char c : s) {
      if (is_space(c)) {
        (started_ ? tail : lead) += c;
        space_since_event_ = true;
        space_pending_ = !text.empty();
        continue;
      }
      event();
      if (space_pending_) text += ' ';
      space_pending_ = false;
      text += c;
    }
  }

  void event() {
    if (awaiting_ >= 0) space_after_[static_cast<size_t>(awaiting_)] = space_since_event_;
    awaiting_ = -1;
    space_since_event_ = false;
    started_ = true;
    tail.clear();
  }

  void set_space_after(std::vector<Mark>& marks_here) const {
    for (auto& m : marks_here) {
      if (m.point_id >= 0) m.space_after = space_after_[static_cast<size_t>(m.point_id)] != 0;
      set_space_after(m.children);
    }
  }

  bool started_ = false;           // an event seen
  bool space_since_event_ = false;
  bool space_pending_ = false;     // the next word character starts a new word
  int awaiting_ = -1;              // the last point, until the next event
  std::vector<char> space_after_;  // per point
  int marks_seen_ = 0;
};

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < text.size()) {
    const size_t start = text.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(text.size(), text.find_first_of(" \t", start));
    words.push_back(text.substr(start, end - start));
    at = end;
  }
  return words;
}

// Where a run's source marks go among the target words.
class Placement {
 public:
  Placement(const std::string& source, const std::vector<std::string_view>& source_words, int target_words,
            const Links& links)
      : source_(source), n_target_(target_words) {
    for (const auto word : source_words) starts_.push_back(static_cast<size_t>(word.data() - source.data()));
    for (const auto word : source_words) ends_.push_back(static_cast<size_t>(word.data() - source.data()) + word.size());
    targets_.resize(source_words.size());
    for (const auto& [s, t] : links) {
      if (s >= 0 && s < static_cast<int>(targets_.size()) && t >= 0 && t < n_target_) targets_[static_cast<size_t>(s)].push_back(t);
    }
  }

  // Target intervals for `marks` and their children, nested and in order within [from, to).
  void place(std::vector<Mark>& marks, int from, int to) const {
    for (auto& m : marks) {
      map(m);
      m.t0 = std::clamp(m.t0, from, to);
      m.t1 = std::clamp(m.t1, m.t0, to);
    }
    std::stable_sort(marks.begin(), marks.end(),
                     [](const Mark& a, const Mark& b) { return a.t0 != b.t0 ? a.t0 < b.t0 : a.order < b.order; });
    // Siblings may not overlap: a tag that runs into the next tag's words ends where they begin,
    // and one that starts where the one before it still runs starts where that one ends.
    int cursor = from;
    for (size_t i = 0; i < marks.size(); ++i) {
      auto& m = marks[i];
      m.t0 = std::max(m.t0, cursor);
      m.t1 = std::max(m.t1, m.t0);
      if (!m.point && i + 1 < marks.size() && !marks[i + 1].point && marks[i + 1].t0 > m.t0 && marks[i + 1].t0 < m.t1) {
        m.t1 = marks[i + 1].t0;
      }
      cursor = m.t1;
      place(m.children, m.t0, m.t1);
    }
  }

 private:
  int n_source() const { return static_cast<int>(starts_.size()); }

  // The source word boundary before character `at`: the number of words that start before it.
  int boundary_at(size_t at) const {
    return static_cast<int>(std::lower_bound(starts_.begin(), starts_.end(), at) - starts_.begin());
  }

  // The target word boundary for source boundary `k`: after the translation of the word before it,
  // or else before that of the word after it, or else at the same share of the sentence.
  int target_boundary(int k) const {
    if (k <= 0) return 0;
    if (k >= n_source()) return n_target_;
    const auto& before = targets_[static_cast<size_t>(k - 1)];
    if (!before.empty()) return *std::max_element(before.begin(), before.end()) + 1;
    const auto& after = targets_[static_cast<size_t>(k)];
    if (!after.empty()) return *std::min_element(after.begin(), after.end());
    return static_cast<int>(std::lround(static_cast<double>(k) * n_target_ / n_source()));
  }

  // source_[from, to) when it is ASCII punctuation only, else "".
  std::string punctuation(size_t from, size_t to) const {
    if (from >= to || to > source_.size()) return "";
    for (size_t i = from; i < to; ++i) {
      if (!std::ispunct(static_cast<unsigned char>(source_[i]))) return "";
    }
    return std::string(source_.substr(from, to - from));
  }

  void map(Mark& m) const {
    int s0 = boundary_at(m.begin), s1 = s0;
    if (!m.point) {  // the words the mark overlaps
      while (s0 > 0 && ends_[static_cast<size_t>(s0 - 1)] > m.begin) --s0;
      s1 = boundary_at(m.end);
    }
    int low = n_target_, high = -1;
    for (int s = s0; s < s1; ++s) {
      for (const int t : targets_[static_cast<size_t>(s)]) {
        low = std::min(low, t);
        high = std::max(high, t);
      }
    }
    if (!m.point && s0 < s1) {
      m.lead_out = punctuation(starts_[static_cast<size_t>(s0)], m.begin);
      m.trail_out = punctuation(m.end, ends_[static_cast<size_t>(s1 - 1)]);
    }
    if (high >= 0) {
      m.t0 = low;
      m.t1 = high + 1;
    } else {
      m.t0 = target_boundary(s0);
      m.t1 = std::max(m.t0, target_boundary(s1));
    }
  }

  std::string_view source_;
  int n_target_;
  std::vector<size_t> starts_, ends_;
  std::vector<std::vector<int>> targets_;
};

// Writes target words with the placed marks between them: a space between two words, before the
// tags that open on a word, and around a point as the source had it.
class RunWriter {
 public:
  RunWriter(std::string& out, const std::vector<std::string_view>& words)
      : out_(out), words_(words), cut_front_(words.size()), cut_back_(words.size()) {}

  void write(const std::vector<Mark>& marks, int from, int to) {
    const int n = static_cast<int>(words_.size());
    int at = from;
    for (const auto& m : marks) {
      write_words(at, m.t0);
      if (m.point) {
        const bool glued_to_word = separator_ == kNeeded && !m.space_before;
        if (separator_ == kNeeded && m.space_before) out_ += ' ';
        markup::write(*m.node, out_);
        // Glued to the word before it, a point does not glue that word to the next.
        separator_ = m.space_after || glued_to_word ? kNeeded : kWritten;
      } else {
        const bool lead = m.t0 < m.t1 && fits(m.lead_out, m.t0, /*front=*/true);
        if (lead) {
          if (separator_ == kNeeded) out_ += ' ';
          escape(m.lead_out, out_, false);
          separator_ = kWritten;
          cut_front_[static_cast<size_t>(m.t0)] = m.lead_out.size();
        }
        if (separator_ == kNeeded && m.t0 < n) {
          out_ += ' ';
          separator_ = kWritten;
        }
        const bool trail = m.t0 < m.t1 && fits(m.trail_out, m.t1 - 1, /*front=*/false);
        if (trail) cut_back_[static_cast<size_t>(m.t1 - 1)] = m.trail_out.size();
        open_tag(*m.node, out_);
        write(m.children, m.t0, m.t1);
        close_tag(*m.node, out_);
        if (trail) {
          escape(m.trail_out, out_, false);
          separator_ = kNeeded;
        }
      }
      at = std::max(at, m.t1);
    }
    write_words(at, to);
  }

 private:
  // Whether target word `w` begins (ends) with `punctuation`, not cut there yet, with more left.
  bool fits(const std::string& punctuation, int w, bool front) const {
    if (punctuation.empty()) return false;
    const auto i = static_cast<size_t>(w);
    const auto word = words_[i].substr(cut_front_[i], words_[i].size() - cut_front_[i] - cut_back_[i]);
    if ((front ? cut_front_[i] : cut_back_[i]) != 0 || word.size() <= punctuation.size()) return false;
    return front ? word.substr(0, punctuation.size()) == punctuation
                 : word.substr(word.size() - punctuation.size()) == punctuation;
  }

  void write_words(int from, int to) {
    for (int w = from; w < to; ++w) {
      const auto i = static_cast<size_t>(w);
      if (separator_ == kNeeded) out_ += ' ';
      escape(words_[i].substr(cut_front_[i], words_[i].size() - cut_front_[i] - cut_back_[i]), out_, false);
      separator_ = kNeeded;
    }
  }

  // What goes before the next word: nothing at the start or after a separator written (kWritten), a
  // space after a word (kNeeded).
  enum Separator { kWritten, kNeeded };

  std::string& out_;
  const std::vector<std::string_view>& words_;
  std::vector<size_t> cut_front_, cut_back_;  // characters of each word written outside a tag
  Separator separator_ = kWritten;
};

}  // namespace

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
    RunText run;
    for (size_t i = from; i < to; ++i) run.add(nodes[i], run.marks);
    run.finish();
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
    const auto& translation = (*translations_)[next_];
    const auto& links = (*links_)[next_];
    ++next_;
    const auto source_words = split_words(run.text);
    const auto target_words = split_words(translation);
    const int n_target = static_cast<int>(target_words.size());
    Placement(run.text, source_words, n_target, links).place(run.marks, 0, n_target);
    *out_ += run.lead;
    RunWriter(*out_, target_words).write(run.marks, 0, n_target);
    *out_ += run.tail;
  }

  std::vector<std::string>* segments_ = nullptr;
  std::string* out_ = nullptr;
  const std::vector<std::string>* translations_ = nullptr;
  const std::vector<Links>* links_ = nullptr;
  size_t next_ = 0;
};

}  // namespace

HtmlPage::HtmlPage(std::string_view html) : tree_(std::make_unique<Tree>()) {
  tree_->nodes = parse(html);
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
