// HTML pages cut into runs of text and put back together (markup/html.h): what is translated, what
// is kept as read, and that every tag comes out once, well nested, whatever the alignment says.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "trafo/decode/output_text.h"
#include "trafo/errors.h"
#include "trafo/markup/html.h"

namespace trafo::markup {
namespace {


// The page with each run "translated" into itself, each word linked to itself.
std::string same_words(const HtmlPage& page) {
  std::vector<Links> links;
  for (const auto& segment : page.segments()) {
    Links identity;
    for (int w = 0; w < decode::count_words(segment); ++w) identity.emplace_back(w, w);
    links.push_back(identity);
  }
  return page.render(page.segments(), links);
}

// Each tag name with its count of start tags, and whether end tags close them in order.
struct Tags {
  std::map<std::string, int> opened;
  bool nested = true;
};

Tags tags_of(const std::string& html) {
  static const std::vector<std::string> kVoid = {"br", "img", "input", "wbr", "hr", "meta", "link"};
  Tags tags;
  std::vector<std::string> open;
  size_t at = 0;
  while ((at = html.find('<', at)) != std::string::npos) {
    if (html.compare(at, 4, "<!--") == 0) {
      at = html.find("-->", at);
      continue;
    }
    const size_t end = html.find('>', at);
    const bool closing = html[at + 1] == '/';
    const size_t name_start = at + (closing ? 2 : 1);
    const size_t name_end = html.find_first_of(" >", name_start);
    const std::string name = html.substr(name_start, name_end - name_start);
    if (closing) {
      if (open.empty() || open.back() != name) tags.nested = false;
      if (!open.empty()) open.pop_back();
    } else if (name != "!DOCTYPE") {
      ++tags.opened[name];
      if (std::find(kVoid.begin(), kVoid.end(), name) == kVoid.end()) open.push_back(name);
    }
    at = end;
  }
  if (!open.empty()) tags.nested = false;
  return tags;
}

TEST(Html, BlocksAreRunsAndInlineTagsStayInTheirRun) {
  const HtmlPage page("<h1>A  title</h1>\n<p>Hello <b>big</b>\n   world<br>again</p><ul><li>one</li><li>two <i>x</i></li></ul>");
  EXPECT_EQ(page.segments(), (std::vector<std::string>{"A title", "Hello big world again", "one", "two x"}));
}

TEST(Html, ThePageWithItsOwnWordsComesBackAsWritten) {
  for (const std::string html :
       {"<p>Hello <b>big</b> world</p>", "<div><p class=\"x\" id=\"y\">A <a href=\"/a?b=1&amp;c=2\">link</a>.</p></div>",
        "<!DOCTYPE html><html><head><title>T</title></head><body><p>x &lt; y&nbsp;z &amp; w</p></body></html>",
        "Plain <em>text</em> with <span><b>nested</b> tags</span>", "<p>a <!-- note -->b c</p>",
        "<p><input disabled> <img src=\"i.png\" alt=\"an image\"> word</p>"}) {
    const HtmlPage page(html);
    EXPECT_EQ(page.render_source(), html);
    EXPECT_EQ(same_words(page), html);
  }
}

TEST(Html, InlineTagsFollowTheWordsTheyWrapped) {
  const HtmlPage page("<p>the <b>red</b> car is <i>here</i></p>");
  ASSERT_EQ(page.segments(), std::vector<std::string>{"the red car is here"});
  // "la voiture rouge est ici": red -> rouge (2), car -> voiture (1).
  const Links links = {{0, 0}, {1, 2}, {2, 1}, {3, 3}, {4, 4}};
  EXPECT_EQ(page.render({"la voiture rouge est ici"}, {links}), "<p>la voiture <b>rouge</b> est <i>ici</i></p>");
  // A tag whose words run into the next tag's ends where they begin.
  const HtmlPage two("<p><b>a b</b> <i>c</i></p>");
  EXPECT_EQ(two.render({"x y z"}, {{{0, 0}, {1, 2}, {2, 1}}}), "<p><b>x</b> <i>y</i> z</p>");
  // Words linked elsewhere part a tag's words into stretches: the tag wraps the stretch with the
  // most words, of equals the longest, never the words between ("bought" -> "haben ... gekauft").
  const HtmlPage bought("<p>we <b>bought</b> a duck</p>");
  EXPECT_EQ(bought.render({"wir haben eine Ente gekauft"}, {{{0, 0}, {1, 1}, {1, 4}, {2, 2}, {3, 3}}}),
            "<p>wir haben eine Ente <b>gekauft</b></p>");
  const HtmlPage most("<p><b>a b</b> c</p>");
  EXPECT_EQ(most.render({"x q y z"}, {{{0, 0}, {1, 2}, {1, 3}, {2, 1}}}), "<p>x q <b>y z</b></p>");
  // A word without links does not part them.
  EXPECT_EQ(most.render({"x y z w"}, {{{0, 0}, {1, 2}, {2, 3}}}), "<p><b>x y z</b> w</p>");
  // Punctuation of a word outside its tag stays outside where the target word has it too.
  const HtmlPage punctuated("<p>See <a href=\"#\">the page</a>, (<i>now</i>).</p>");
  ASSERT_EQ(punctuated.segments(), std::vector<std::string>{"See the page, (now)."});
  EXPECT_EQ(punctuated.render({"Voir (maintenant). la page,"}, {{{0, 0}, {1, 2}, {2, 3}, {3, 1}}}),
            "<p>Voir (<i>maintenant</i>). <a href=\"#\">la page</a>,</p>");
}

TEST(Html, PointsKeepTheSpacesTheyHad) {
  // Glued inside a word, a point still parts the translation's words.
  const HtmlPage glued("<p>x a<img src=\"i\">b y</p>");
  ASSERT_EQ(glued.segments(), std::vector<std::string>{"x ab y"});
  EXPECT_EQ(glued.render({"X AB Y"}, {{{0, 0}, {1, 1}, {2, 2}}}), "<p>X AB<img src=\"i\"> Y</p>");
  // A void element the parser does not know as void (wbr) takes nothing with it.
  const HtmlPage wbr("<p>Text<wbr>more words here</p>");
  EXPECT_EQ(wbr.segments(), std::vector<std::string>{"Textmore words here"});
  EXPECT_EQ(wbr.render_source(), "<p>Text<wbr>more words here</p>");
}

TEST(Html, WhatIsNotTranslatedIsWrittenBackAsRead) {
  const HtmlPage page(
      "<p>Run <code>make  all</code> now</p><pre>keep\n  this</pre><script>if (a < b) x();</script>"
      "<p translate=\"no\">Not this</p><p class=\"a notranslate\">Nor this</p><style>p > b {}</style>");
  EXPECT_EQ(page.segments(), std::vector<std::string>{"Run now"});
  EXPECT_EQ(page.render({"Lance maintenant"}, {{{0, 0}, {1, 1}}}),
            "<p>Lance <code>make  all</code> maintenant</p><pre>keep\n  this</pre><script>if (a < b) x();</script>"
            "<p translate=\"no\">Not this</p><p class=\"a notranslate\">Nor this</p><style>p > b {}</style>");
}

TEST(Html, EveryTagComesOutOnceAndNestedWhateverTheLinks) {
  const std::string html =
      "<p>One <b>two <i>three</i> four</b> five <a href=\"#\">six <sub>seven</sub></a><br>eight <span>nine</span></p>"
      "<div>ten <em>eleven</em><!-- c --> <img src=\"x\"></div>";
  const HtmlPage page(html);
  const auto source_tags = tags_of(html);
  ASSERT_TRUE(source_tags.nested);
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::string> translations;
    std::vector<Links> links;
    for (const auto& segment : page.segments()) {
      const int source_words = decode::count_words(segment);
      const int target_words = static_cast<int>(random() % 12);
      std::string text;
      for (int w = 0; w < target_words; ++w) text += (w ? " w" : "w") + std::to_string(w);
      Links random_links;
      for (int k = 0; k < static_cast<int>(random() % 16); ++k) {
        random_links.emplace_back(static_cast<int>(random() % (source_words + 2)) - 1,
                                  static_cast<int>(random() % (target_words + 2)) - 1);
      }
      translations.push_back(text);
      links.push_back(random_links);
    }
    const auto out = page.render(translations, links);
    const auto out_tags = tags_of(out);
    EXPECT_TRUE(out_tags.nested) << out;
    EXPECT_EQ(out_tags.opened, source_tags.opened) << out;
    EXPECT_EQ(HtmlPage(out).render_source(), out) << "the parser reads the output as written";
    for (size_t i = 0; i < translations.size(); ++i) {
      EXPECT_NE(out.find(translations[i].empty() ? "" : translations[i].substr(0, 2)), std::string::npos);
    }
  }
}

TEST(Html, ThePageIsReadAsABrowserReadsIt) {
  // A script's text ends at </script> only.
  const std::string script = "<p>x<script>var s = \"<b>x</b>\"; if (a</b) f();</script> y</p>";
  EXPECT_EQ(HtmlPage(script).render_source(), script);
  EXPECT_EQ(HtmlPage(script).segments(), std::vector<std::string>{"x y"});
  // A document gets no doctype it did not have; <header> is no <head>; text after </body> stays.
  for (const std::string page : {"<html><body><p>a</p></body></html>", "Hello <header>x</header>",
                                 "<p>x</p></body><p>after</p>"}) {
    const auto out = HtmlPage(page).render_source();
    EXPECT_EQ(out.find("DOCTYPE"), std::string::npos) << out;
    EXPECT_EQ(out.find("<p>Hello"), std::string::npos) << out;
    EXPECT_NE(out.find(page.substr(page.size() - 8)), std::string::npos) << out;
  }
  // A byte order mark is not text.
  EXPECT_EQ(HtmlPage("\xEF\xBB\xBF<p>x</p>").segments(), std::vector<std::string>{"x"});
  // Boolean attributes are written as they are usually written.
  EXPECT_EQ(HtmlPage("<p><input type=\"checkbox\" checked> x</p>").render_source(),
            "<p><input type=\"checkbox\" checked> x</p>");
}

TEST(Html, TranslatedTextIsEscaped) {
  const HtmlPage page("<p>a</p>");
  EXPECT_EQ(page.render({"x<y & z"}, {{}}), "<p>x&lt;y &amp; z</p>");
}

// libxml2 cuts a text node at 10,000,000 bytes and drops the rest of the page without a word unless
// told otherwise: a page's script, comment and attribute value past that are kept whole, and a page
// over trafo's own limit is an error naming it.
TEST(Html, NothingIsCutBelowThePagesLimit) {
  const std::string big(10'150'000, 'a');
  for (const std::string& page : {"<p>start</p><script>" + big + "</script><p>end</p>",
                                  "<p>start</p><!--" + big + "--><p>end</p>", "<p title=\"" + big + "\">start</p><p>end</p>"}) {
    const HtmlPage parsed(page);
    EXPECT_EQ(parsed.segments(), (std::vector<std::string>{"start", "end"}));
    EXPECT_EQ(parsed.render_source(), page);
  }
  try {
    HtmlPage(std::string(HtmlPage::kMaxBytes + 1, ' '));
    ADD_FAILURE() << "a page over the limit was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("256 MiB"), std::string::npos) << e.what();
  }
}

TEST(Html, InputThatIsNotAPageIsAnInputError) {
  EXPECT_THROW(HtmlPage("<p>\xff</p>"), InputError);
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "<span>";
  EXPECT_THROW(HtmlPage(deep + "x"), InputError);
  EXPECT_THROW(HtmlPage("<html><body>" + deep + "x"), InputError);
  std::string many = "<p";
  for (int i = 0; i < 1500; ++i) many += " a" + std::to_string(i) + "=\"1\"";
  EXPECT_THROW(HtmlPage(many + ">x</p>"), InputError);
  EXPECT_NO_THROW(HtmlPage("<p title=\"a b c d e f g h i j k l m n o p q r s t u v w x y z\">x</p>"));
  // A script's text and comments hold no tags to count; unquoted values are part of their attribute.
  std::string script = "<p>x</p><script>", comment = "<!-- <p ", unquoted = "<p";
  for (int i = 0; i < 1500; ++i) script += " a" + std::to_string(i) + "=1,";
  for (int i = 0; i < 1500; ++i) comment += " c" + std::to_string(i);
  for (int i = 0; i < 900; ++i) unquoted += " a" + std::to_string(i) + "=1";
  EXPECT_NO_THROW(HtmlPage(script + "</script>"));
  EXPECT_NO_THROW(HtmlPage(comment + " --><p>x</p>"));
  EXPECT_NO_THROW(HtmlPage(unquoted + ">x</p>"));
  EXPECT_TRUE(HtmlPage("").segments().empty());
  EXPECT_EQ(HtmlPage("").render({}, {}), "");
}

TEST(Html, PharaohLinksParse) {
  EXPECT_EQ(parse_pharaoh("0-0 1-2  3-1 x-1 2- 12-40"), (Links{{0, 0}, {1, 2}, {3, 1}, {12, 40}}));
}

}  // namespace
}  // namespace trafo::markup
