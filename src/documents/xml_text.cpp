// A paragraph's children are cut in three: those before its first piece of text (its properties,
// a picture it begins with) and after its last (Word's and DrawingML's closing marks) stay where
// they are; those between become the paragraph's <p> and are rebuilt from its translation. The same
// walk (Layout) numbers the formats, inline elements and points of a paragraph when its page is
// made and when it is rebuilt, so that the numbers in the page find their nodes again.
#include "xml_text.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

#include "trafo/errors.h"
#include "trafo/markup/html.h"

namespace trafo::documents::detail {

namespace {

constexpr const char* kWordNs = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
constexpr const char* kDrawingNs = "http://schemas.openxmlformats.org/drawingml/2006/main";
constexpr const char* kTextNs = "urn:oasis:names:tc:opendocument:xmlns:text:1.0";

using XmlDoc = std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)>;

std::string_view chars(const xmlChar* text) { return text ? reinterpret_cast<const char*>(text) : ""; }
const xmlChar* xml(const char* text) { return reinterpret_cast<const xmlChar*>(text); }

XmlDoc parse_xml(const std::string& text, const std::string& what) {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
  // No network, no entity substitution (a reference stays a node of its own), and HUGE: the
  // document's limits, checked before, bound the size, not libxml2's 10 MB per text node.
  const int options = XML_PARSE_NONET | XML_PARSE_HUGE | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
  XmlDoc doc(xmlReadMemory(text.data(), static_cast<int>(text.size()), nullptr, "UTF-8", options), &xmlFreeDoc);
  if (!doc || !xmlDocGetRootElement(doc.get())) throw InputError(what + " is not well-formed XML");
  return doc;
}

std::string serialize(xmlDoc* doc) {
  xmlChar* memory = nullptr;
  int size = 0;
  xmlDocDumpMemoryEnc(doc, &memory, &size, "UTF-8");
  std::string out(reinterpret_cast<const char*>(memory), static_cast<size_t>(size));
  xmlFree(memory);
  return out;
}

std::string dump(xmlNode* node) {
  std::unique_ptr<xmlBuffer, decltype(&xmlBufferFree)> buffer(xmlBufferCreate(), &xmlBufferFree);
  xmlNodeDump(buffer.get(), node->doc, node, 0, 0);
  return std::string(chars(xmlBufferContent(buffer.get())));
}

bool is_blank(std::string_view text) { return text.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// What a format's markup names, and how its paragraphs hold text.
struct Rules {
  Markup markup;
  const char* ns;

  bool element(const xmlNode* node, const char* name) const {
    return node->type == XML_ELEMENT_NODE && node->ns && chars(node->ns->href) == ns && chars(node->name) == name;
  }
  bool paragraph(const xmlNode* node) const {
    return element(node, "p") || (markup == Markup::kOpenDocument && element(node, "h"));
  }
  bool runs() const { return markup != Markup::kOpenDocument; }  // text in w:r / a:r, each with its format
  bool run(const xmlNode* node) const { return runs() && element(node, "r"); }
  // Inline elements translated inside the text around them; every other element is a point.
  bool wrapper(const xmlNode* node) const {
    static const std::set<std::string_view> word = {"hyperlink", "ins", "smartTag", "sdt", "sdtContent",
                                                    "customXml", "moveTo", "dir", "bdo"};
    static const std::set<std::string_view> open_document = {"span", "a", "meta"};
    if (node->type != XML_ELEMENT_NODE || !node->ns || chars(node->ns->href) != ns) return false;
    if (markup == Markup::kWord) return word.count(chars(node->name)) > 0;
    return markup == Markup::kOpenDocument && open_document.count(chars(node->name)) > 0;
  }
  // Points that part the words around them.
  bool parts_words(const xmlNode* node) const {
    if (markup == Markup::kOpenDocument) return element(node, "tab") || element(node, "line-break");
    return element(node, "tab") || element(node, "br") || element(node, "cr");
  }
  // Layout caches the application writes again: left out of the translation.
  bool dropped(const xmlNode* node) const {
    return markup == Markup::kWord && (element(node, "proofErr") || element(node, "lastRenderedPageBreak"));
  }

  // Whether `node` holds text of its paragraph (not of a paragraph inside it).
  bool has_text(const xmlNode* node) const {
    if (node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE) {
      return markup == Markup::kOpenDocument && !is_blank(chars(node->content));
    }
    if (node->type != XML_ELEMENT_NODE) return false;
    if (run(node)) {
      for (const xmlNode* c = node->children; c; c = c->next) {
        if (element(c, "t") && !text_of(c).empty()) return true;
      }
      return false;
    }
    if (!wrapper(node) || contains_paragraph(node)) return false;
    for (const xmlNode* c = node->children; c; c = c->next) {
      if (has_text(c)) return true;
    }
    return false;
  }
  bool contains_paragraph(const xmlNode* node) const {
    for (const xmlNode* c = node->children; c; c = c->next) {
      if (paragraph(c) || contains_paragraph(c)) return true;
    }
    return false;
  }
  static std::string text_of(const xmlNode* node) {
    xmlChar* content = xmlNodeGetContent(node);
    std::string text(chars(content));
    xmlFree(content);
    return text;
  }
};

// A container's children (a paragraph's, an inline element's): the fixed ones before its first
// piece of text and after its last, and those between.
struct Cut {
  std::vector<xmlNode*> leading, middle, trailing;
};

Cut cut(xmlNode* container, const Rules& rules) {
  std::vector<xmlNode*> children;
  for (xmlNode* c = container->children; c; c = c->next) children.push_back(c);
  size_t first = children.size(), last = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    if (rules.has_text(children[i])) {
      first = std::min(first, i);
      last = i + 1;
    }
  }
  Cut parts;
  if (first == children.size()) {
    parts.leading = children;
    return parts;
  }
  parts.leading.assign(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(first));
  parts.middle.assign(children.begin() + static_cast<std::ptrdiff_t>(first),
                      children.begin() + static_cast<std::ptrdiff_t>(last));
  parts.trailing.assign(children.begin() + static_cast<std::ptrdiff_t>(last), children.end());
  return parts;
}

// One paragraph walked: its page markup, and the nodes its numbers stand for.
struct Layout {
  struct Wrapper {
    xmlNode* node;
    Cut parts;
  };
  Cut parts;
  std::string html;                // the <p>'s content
  std::vector<xmlNode*> formats;   // format K's properties (w:rPr, a:rPr; null: none); 0 is the base
  std::vector<Wrapper> wrappers;   // <span data-w=K>
  std::vector<xmlNode*> points;    // <img data-p=K>
  std::vector<bool> point_in_run;  // a point of a run's content (a tab, a picture), not of the paragraph
};

class Walk {
 public:
  Walk(const Rules& rules, xmlNode* paragraph) : rules_(rules) {
    layout_.parts = cut(paragraph, rules);
    if (rules.runs()) {
      // The base format, whose runs need no span: that of the paragraph's first and last runs where
      // they share one ("Felix found **the dirty chicken**."), else that of most of its text
      // outside its links (whose runs often have a format of their own), or of most of its text.
      Lengths lengths;
      count_formats(layout_.parts.middle, lengths, /*inside_wrapper=*/false);
      const auto& length = lengths.outside.empty() ? lengths.all : lengths.outside;
      if (!lengths.order.empty()) {
        std::string base = lengths.order.front();
        for (const auto& key : lengths.order) {
          if (length.count(key) && (!length.count(base) || length.at(key) > length.at(base))) base = key;
        }
        if (lengths.runs.front() == lengths.runs.back()) base = lengths.runs.front();
        keys_[base] = 0;
        layout_.formats.push_back(lengths.node[base]);
      }
    }
    emit(layout_.parts.middle);
    close_span();
  }
  Layout take() { return std::move(layout_); }

 private:
  static xmlNode* properties(xmlNode* run, const Rules& rules) {
    for (xmlNode* c = run->children; c; c = c->next) {
      if (rules.element(c, "rPr")) return c;
    }
    return nullptr;
  }

  // The characters of text in each format (a run's properties, written out), and each format's
  // first properties node, in order of appearance.
  struct Lengths {
    std::map<std::string, size_t> all, outside;
    std::map<std::string, xmlNode*> node;
    std::vector<std::string> order;
    std::vector<std::string> runs;  // each run's, in order
  };

  void count_formats(const std::vector<xmlNode*>& nodes, Lengths& lengths, bool inside_wrapper) {
    for (xmlNode* n : nodes) {
      if (rules_.run(n)) {
        xmlNode* format = properties(n, rules_);
        const std::string key = format ? dump(format) : "";
        lengths.runs.push_back(key);
        if (!lengths.node.count(key)) {
          lengths.node[key] = format;
          lengths.order.push_back(key);
        }
        for (const xmlNode* c = n->children; c; c = c->next) {
          if (!rules_.element(c, "t")) continue;
          const auto size = Rules::text_of(c).size();
          lengths.all[key] += size;
          if (!inside_wrapper) lengths.outside[key] += size;
        }
      } else if (rules_.wrapper(n) && rules_.has_text(n)) {
        count_formats(cut(n, rules_).middle, lengths, /*inside_wrapper=*/true);
      }
    }
  }

  int format_of(xmlNode* run) {
    xmlNode* format = properties(run, rules_);
    const std::string key = format ? dump(format) : "";
    const auto [it, added] = keys_.emplace(key, static_cast<int>(layout_.formats.size()));
    if (added) layout_.formats.push_back(format);
    return it->second;
  }

  // A point is an <img>, glued to the words around it as the source has it, or a <br> where it
  // parts words (a tab, a line break).
  void point(xmlNode* node, bool in_run) {
    const char* tag = rules_.parts_words(node) ? "br" : "img";
    layout_.html += std::string("<") + tag + " data-p=\"" + std::to_string(layout_.points.size()) + "\">";
    layout_.points.push_back(node);
    layout_.point_in_run.push_back(in_run);
  }

  void close_span() {
    if (span_ > 0) layout_.html += "</span>";
    span_ = 0;
  }

  void emit(const std::vector<xmlNode*>& nodes) {
    for (xmlNode* node : nodes) {
      if (rules_.dropped(node)) continue;
      if (rules_.run(node)) {
        run(node);
      } else if (node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE) {
        if (rules_.markup == Markup::kOpenDocument) markup::escape_text(chars(node->content), layout_.html);
      } else if (rules_.markup == Markup::kOpenDocument && rules_.element(node, "s")) {
        layout_.html += ' ';  // text:s, spaces: one, as the page collapses them
      } else if (rules_.wrapper(node) && rules_.has_text(node)) {
        close_span();
        const size_t index = layout_.wrappers.size();
        layout_.wrappers.push_back({node, cut(node, rules_)});
        layout_.html += "<span data-w=\"" + std::to_string(index) + "\">";
        const auto middle = layout_.wrappers[index].parts.middle;
        emit(middle);
        close_span();
        layout_.html += "</span>";
      } else {
        close_span();
        point(node, false);
      }
    }
  }

  void run(xmlNode* node) {
    const int format = format_of(node);
    if (format != span_) {
      close_span();
      if (format != 0) layout_.html += "<span data-r=\"" + std::to_string(format) + "\">";
      span_ = format;
    }
    for (xmlNode* c = node->children; c; c = c->next) {
      if (rules_.element(c, "rPr") || rules_.dropped(c)) continue;
      if (rules_.element(c, "t")) {
        markup::escape_text(Rules::text_of(c), layout_.html);
      } else if (c->type == XML_ELEMENT_NODE) {
        point(c, true);
      }
    }
  }

  const Rules& rules_;
  Layout layout_;
  std::map<std::string, int> keys_;
  int span_ = 0;  // the format of the open <span data-r> (0: none open)
};

Rules rules_for(Markup markup) {
  switch (markup) {
    case Markup::kWord:
      return {markup, kWordNs};
    case Markup::kDrawing:
      return {markup, kDrawingNs};
    case Markup::kOpenDocument:
      return {markup, kTextNs};
  }
  return {markup, kWordNs};
}

// The paragraphs of the part that hold text, in document order (one inside another's picture or
// note after it).
std::vector<xmlNode*> paragraphs(xmlNode* node, const Rules& rules) {
  std::vector<xmlNode*> found;
  std::vector<xmlNode*> stack = {node};
  while (!stack.empty()) {
    xmlNode* n = stack.back();
    stack.pop_back();
    if (rules.paragraph(n) && !cut(n, rules).middle.empty()) found.push_back(n);
    std::vector<xmlNode*> children;
    for (xmlNode* c = n->children; c; c = c->next) {
      if (c->type == XML_ELEMENT_NODE) children.push_back(c);
    }
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }
  return found;
}

// Puts one paragraph's translated <p> back into the paragraph.
class Rebuild {
 public:
  // Takes the paragraph's middle children, and its inline elements' own, out of the tree: the
  // inline elements and points are put back where the page has them, the rest is `unused`.
  Rebuild(const Rules& rules, xmlNode* paragraph, Layout layout, std::vector<xmlNode*>& unused)
      : rules_(rules), layout_(std::move(layout)), doc_(paragraph->doc), ns_(paragraph->ns), paragraph_(paragraph),
        anchor_(layout_.parts.trailing.empty() ? nullptr : layout_.parts.trailing.front()) {
    const auto kept = [&](xmlNode* node) {
      return std::find(layout_.points.begin(), layout_.points.end(), node) != layout_.points.end() ||
             std::any_of(layout_.wrappers.begin(), layout_.wrappers.end(),
                         [&](const Layout::Wrapper& w) { return w.node == node; });
    };
    const auto take_out = [&](const std::vector<xmlNode*>& nodes) {
      for (xmlNode* node : nodes) {
        xmlUnlinkNode(node);
        if (!kept(node)) unused.push_back(node);
      }
    };
    take_out(layout_.parts.middle);
    for (const auto& wrapper : layout_.wrappers) take_out(wrapper.parts.middle);
  }

  void fill(const xmlNode* html) { fill(paragraph_, html->children, 0, anchor_); }

 private:
  static int number(const xmlNode* html, const char* name) {
    xmlChar* value = xmlGetProp(html, xml(name));
    if (!value) return -1;
    const std::string text(chars(value));
    xmlFree(value);
    int n = 0;
    for (const char c : text) {
      if (c < '0' || c > '9' || n > 100000000) return -1;
      n = n * 10 + (c - '0');
    }
    return text.empty() ? -1 : n;
  }

  void place(xmlNode* container, xmlNode* node, xmlNode* anchor) {
    if (anchor) {
      xmlAddPrevSibling(anchor, node);
    } else {
      xmlAddChild(container, node);
    }
  }

  // The run of `format` that text and run points at this place go into: the last one placed here
  // if it has that format, else a new one.
  xmlNode* run_for(xmlNode* container, int format, xmlNode* anchor) {
    if (open_run_ && open_run_->parent == container && open_run_->next == anchor && open_format_ == format) {
      return open_run_;
    }
    xmlNode* run = xmlNewDocNode(doc_, ns_, xml("r"), nullptr);
    place(container, run, anchor);
    if (format >= 0 && static_cast<size_t>(format) < layout_.formats.size() && layout_.formats[format]) {
      // Cloned in place, so that its names take the declarations in scope there.
      xmlNode* properties = nullptr;
      if (xmlDOMWrapCloneNode(nullptr, doc_, layout_.formats[format], &properties, doc_, run, 1, 0) == 0) {
        xmlAddChild(run, properties);
      }
    }
    open_run_ = run;
    open_format_ = format;
    return run;
  }

  void text(xmlNode* container, std::string_view text, int format, xmlNode* anchor) {
    // The page puts a space after a point that parts words; the point itself parts them here.
    if (after_break_ && !text.empty() && text.front() == ' ') text.remove_prefix(1);
    after_break_ = false;
    if (text.empty()) return;
    const std::string content(text);
    if (!rules_.runs()) {
      place(container, xmlNewDocText(doc_, xml(content.c_str())), anchor);
      return;
    }
    xmlNode* run = run_for(container, format, anchor);
    xmlNode* last = xmlGetLastChild(run);
    if (!last || !rules_.element(last, "t")) {
      last = xmlNewDocNode(doc_, ns_, xml("t"), nullptr);
      if (rules_.markup == Markup::kWord) xmlNodeSetSpacePreserve(last, 1);
      xmlAddChild(run, last);
    }
    xmlNodeAddContent(last, xml(content.c_str()));
  }

  void fill(xmlNode* container, const xmlNode* html, int format, xmlNode* anchor) {
    for (const xmlNode* h = html; h; h = h->next) {
      if (h->type == XML_TEXT_NODE) {
        text(container, chars(h->content), format, anchor);
        continue;
      }
      if (h->type != XML_ELEMENT_NODE) continue;
      after_break_ = false;
      const int r = number(h, "data-r"), w = number(h, "data-w"), p = number(h, "data-p");
      if (r >= 0 && static_cast<size_t>(r) < layout_.formats.size()) {
        fill(container, h->children, r, anchor);
      } else if (w >= 0 && static_cast<size_t>(w) < layout_.wrappers.size()) {
        // The element itself, its own first and last children in it as they were.
        const auto& wrapper = layout_.wrappers[w];
        xmlUnlinkNode(wrapper.node);
        place(container, wrapper.node, anchor);
        fill(wrapper.node, h->children, format, wrapper.parts.trailing.empty() ? nullptr : wrapper.parts.trailing.front());
      } else if (p >= 0 && static_cast<size_t>(p) < layout_.points.size()) {
        xmlNode* node = layout_.points[p];
        xmlUnlinkNode(node);
        if (layout_.point_in_run[p]) {
          xmlAddChild(run_for(container, format, anchor), node);
        } else {
          place(container, node, anchor);
        }
        after_break_ = rules_.parts_words(node);
      } else {
        fill(container, h->children, format, anchor);
      }
    }
  }

  const Rules& rules_;
  Layout layout_;
  xmlDoc* doc_;
  xmlNs* ns_;
  xmlNode* paragraph_ = nullptr;
  xmlNode* anchor_ = nullptr;
  xmlNode* open_run_ = nullptr;
  int open_format_ = -1;
  bool after_break_ = false;  // the last thing placed was a point that parts words
};

// The <p data-i> elements of a translated page, by their number.
std::map<int, const xmlNode*> translated_paragraphs(const xmlNode* node, std::map<int, const xmlNode*> found = {}) {
  for (const xmlNode* n = node; n; n = n->next) {
    if (n->type != XML_ELEMENT_NODE) continue;
    if (chars(n->name) == "p") {
      xmlChar* value = xmlGetProp(n, xml("data-i"));
      if (value) {
        found.emplace(std::atoi(reinterpret_cast<const char*>(value)), n);
        xmlFree(value);
        continue;
      }
    }
    found = translated_paragraphs(n->children, std::move(found));
  }
  return found;
}

}  // namespace

std::string page_of(const std::string& xml_text, Markup markup, const std::string& what) {
  const auto doc = parse_xml(xml_text, what);
  const Rules rules = rules_for(markup);
  std::string page;
  int index = 0;
  for (xmlNode* paragraph : paragraphs(xmlDocGetRootElement(doc.get()), rules)) {
    page += "<p data-i=\"" + std::to_string(index++) + "\">" + Walk(rules, paragraph).take().html + "</p>\n";
  }
  return page;
}

std::string rebuild(const std::string& xml_text, Markup markup, const std::string& translated, const std::string& what) {
  const auto doc = parse_xml(xml_text, what);
  const Rules rules = rules_for(markup);
  const std::string html = "<html><body>" + translated + "</body></html>";
  const int options = HTML_PARSE_RECOVER | HTML_PARSE_NODEFDTD | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                      HTML_PARSE_NONET | HTML_PARSE_NOIMPLIED | XML_PARSE_HUGE;
  const XmlDoc page(htmlReadMemory(html.data(), static_cast<int>(html.size()), nullptr, "UTF-8", options), &xmlFreeDoc);
  if (!page) throw std::runtime_error(what + ": the translated page does not parse");
  const auto translated_ps = translated_paragraphs(xmlDocGetRootElement(page.get()));
  std::vector<xmlNode*> unused;
  int index = 0;
  for (xmlNode* paragraph : paragraphs(xmlDocGetRootElement(doc.get()), rules)) {
    const auto found = translated_ps.find(index++);
    if (found == translated_ps.end()) continue;
    Rebuild(rules, paragraph, Walk(rules, paragraph).take(), unused).fill(found->second);
  }
  // The nodes the rebuilt paragraphs no longer hold go once every paragraph is rebuilt: a format
  // copied into a later run may still be read from them until then.
  for (xmlNode* node : unused) xmlFreeNode(node);
  return serialize(doc.get());
}

}  // namespace trafo::documents::detail
