// One XML part of a document (a Word body, a slide, an OpenDocument's content) as an HTML page of
// its paragraphs, and the part rebuilt from that page as translated (documents/document.h).
// Internal to documents/.
#pragma once

#include <string>

namespace trafo::documents::detail {

// Where a part's text lives: Word's w:p and w:r, DrawingML's a:p and a:r (slides), or
// OpenDocument's text:p and text:h, whose text is the paragraph's own with text:span around it.
enum class Markup { kWord, kDrawing, kOpenDocument };

// The part's paragraphs that hold text, each a <p data-i="N">, as one HTML fragment: a run of
// other formatting than most of its paragraph's text a <span data-r="K">, a link or another
// inline element a <span data-w="K">, anything else (a tab, a break, a picture, a field, a note) an
// <img data-p="K">. InputError naming `what` for XML that does not parse.
std::string page_of(const std::string& xml, Markup markup, const std::string& what);

// The part with each of its paragraphs rebuilt from `translated`, page_of's page as translated:
// the paragraph's properties first and its closing marks last, as they were, and between them its
// text, each piece in a run of the formatting of the <span data-r> around it (most of the
// paragraph's where none), inside a copy of the element of the <span data-w> around it, with every
// <img data-p>'s node where the image stands. Nodes not in the page are left as they were.
std::string rebuild(const std::string& xml, Markup markup, const std::string& translated, const std::string& what);

}  // namespace trafo::documents::detail
