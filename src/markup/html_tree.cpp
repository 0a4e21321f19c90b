#include "html_tree.h"

#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <utf8.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include "trafo/errors.h"
#include "trafo/markup/html.h"

namespace trafo::markup::detail {

static std::string lower(std::string text) {
  for (auto& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

static bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_void(std::string_view name) {
  return one_of(name, {"area", "base", "basefont", "br", "col", "embed", "frame", "hr", "img", "input", "isindex",
                       "keygen", "link", "meta", "param", "source", "track", "wbr"});
}

// Elements whose text is written as it is, not escaped.
bool is_raw_text(std::string_view name) { return one_of(name, {"script", "style"}); }

// Inline elements that wrap words: their tags are placed around the words' translation.
static bool wraps_words(std::string_view name) {
  return one_of(name, {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i", "ins",
                       "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup",
                       "time", "tt", "u", "var"});
}

// Inline elements that stand at a point of the text.
bool is_point(std::string_view name) { return one_of(name, {"br", "img", "input", "wbr"}); }

// Inline elements whose content is never translated.
static bool is_kept_inline(std::string_view name) { return one_of(name, {"code", "math", "script", "style", "svg", "textarea"}); }

static std::optional<std::string> attribute(const Node& element, std::string_view name) {
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
static bool is_boolean_attribute(std::string_view name) {
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

void write(const Node& node, std::string& out, bool raw) {
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

static std::string owned(xmlChar* text) {
  std::string copy = text ? reinterpret_cast<const char*>(text) : "";
  if (text) xmlFree(text);
  return copy;
}

static std::string chars(const xmlChar* text) { return text ? reinterpret_cast<const char*>(text) : ""; }

static std::string doctype(const xmlDtd& dtd) {
  std::string out = "<!DOCTYPE " + chars(dtd.name);
  if (dtd.ExternalID) {
    out += " PUBLIC \"" + chars(dtd.ExternalID) + "\"";
    if (dtd.SystemID) out += " \"" + chars(dtd.SystemID) + "\"";
  } else if (dtd.SystemID) {
    out += " SYSTEM \"" + chars(dtd.SystemID) + "\"";
  }
  return out + ">";
}

static void copy_nodes(const xmlNode* first, std::vector<Node>& out, int depth) {
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
static bool has_tag(const std::string& lowered, std::string_view name) {
  for (size_t at = lowered.find(name); at != std::string::npos; at = lowered.find(name, at + 1)) {
    const size_t after = at + name.size();
    if (after == lowered.size() || is_space(lowered[after]) || lowered[after] == '>' || lowered[after] == '/') return true;
  }
  return false;
}

// Whether the page, lower-cased as `text`, is a whole document (a doctype, or an html, head or body
// tag), or else a fragment of a body.
static bool is_document(const std::string& text) {
  if (text.find("<!doctype") != std::string::npos) return true;
  for (const char* tag : {"<html", "</html", "<head", "</head", "<body", "</body"}) {
    if (has_tag(text, tag)) return true;
  }
  return false;
}

// libxml2 checks each attribute against the element's others: a tag with very many costs quadratic
// time. Counts the attributes of each start tag (name, then an optional = value, quoted or not),
// passing over comments and the text of script and style. `lowered`: `html` lower-cased.
static void check_attributes(std::string_view html, const std::string& lowered) {
  size_t at = 0;
  while ((at = html.find('<', at)) != std::string_view::npos) {
    if (html.substr(at, 4) == "<!--") {
      at = html.find("-->", at + 4);
      if (at == std::string_view::npos) return;
      continue;
    }
    ++at;
    if (at >= html.size() || !std::isalpha(static_cast<unsigned char>(html[at]))) continue;
    const size_t name_start = at;
    while (at < html.size() && !is_space(html[at]) && html[at] != '>' && html[at] != '/') ++at;
    const std::string name = lowered.substr(name_start, at - name_start);
    int attributes = 0;
    while (at < html.size() && html[at] != '>' && html[at] != '<') {
      if (is_space(html[at]) || html[at] == '/') {
        ++at;
        continue;
      }
      while (at < html.size() && !is_space(html[at]) && html[at] != '=' && html[at] != '>' && html[at] != '<') ++at;
      if (++attributes > HtmlPage::kMaxAttributes) {
        throw InputError("an element of the HTML has more than " + std::to_string(HtmlPage::kMaxAttributes) +
                         " attributes");
      }
      while (at < html.size() && is_space(html[at])) ++at;
      if (at >= html.size() || html[at] != '=') continue;
      ++at;
      while (at < html.size() && is_space(html[at])) ++at;
      if (at < html.size() && (html[at] == '"' || html[at] == '\'')) {
        const size_t close = html.find(html[at], at + 1);
        at = close == std::string_view::npos ? html.size() : close + 1;
      } else {
        while (at < html.size() && !is_space(html[at]) && html[at] != '>') ++at;
      }
    }
    if (name == "script" || name == "style") {  // their text holds no tags
      const size_t end = lowered.find("</" + name, at);
      if (end == std::string::npos) return;
      at = end;
    }
  }
}

std::vector<Node> parse(std::string_view html) {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
  if (html.size() > HtmlPage::kMaxBytes) {
    throw InputError("the HTML is larger than " + std::to_string(HtmlPage::kMaxBytes >> 20) + " MiB, trafo's limit for a page");
  }
  if (!utf8::is_valid(html.begin(), html.end())) throw InputError("the HTML is not valid UTF-8");
  if (html.substr(0, 3) == "\xEF\xBB\xBF") html.remove_prefix(3);  // a byte order mark
  const auto lowered = lower(std::string(html));
  check_attributes(html, lowered);
  const bool document = is_document(lowered);
  // A fragment is parsed inside <body>, so that the parser adds no element around its text.
  const std::string text = document ? std::string(html) : "<html><body>" + std::string(html) + "</body></html>";
  // RECOVER: a script's text ends at </script> only; NODEFDTD: no doctype the page did not have.
  // HUGE lifts libxml2's own limits, which otherwise cut a text node (a long script) at 10,000,000
  // bytes without a word; the page's size, checked above, is the limit (libxml2's huge one is 1 GB).
  const int options = HTML_PARSE_RECOVER | HTML_PARSE_NODEFDTD | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                      HTML_PARSE_NONET | HTML_PARSE_NOIMPLIED | XML_PARSE_HUGE;
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

}  // namespace trafo::markup::detail
