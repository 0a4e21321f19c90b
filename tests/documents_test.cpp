// Documents read into pages of text and written back (documents/document.h), on the files of
// tests/fixtures/documents: hand-made Word, OpenDocument text and presentation files with what real
// ones hold, and LibreOffice's conversions of them. A "translation" here is the page's own text,
// or that text upper-cased, with every word linked to itself: the document must come back whole.
#include <gtest/gtest.h>
#include <zip.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"
#include "trafo/documents/document.h"
#include "trafo/errors.h"
#include "trafo/markup/html.h"

namespace trafo::documents {
namespace {

const std::filesystem::path kDocumentFixtures = std::filesystem::path(TRAFO_SOURCE_DIR) / "tests" / "fixtures" / "documents";
const std::vector<std::string> kArchives = {"word.docx", "text.docx", "text.odt", "word.odt", "slides.odp", "slides.pptx"};

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

// Each page rendered with its runs' text changed by `change`, every word linked to itself.
template <typename Change>
std::vector<std::string> translate(const std::vector<std::string>& pages, Change change) {
  std::vector<std::string> out;
  for (const auto& page : pages) {
    const markup::HtmlPage html(page);
    std::vector<std::string> texts;
    std::vector<markup::Links> links;
    for (const auto& segment : html.segments()) {
      texts.push_back(change(segment));
      markup::Links identity;
      const auto words = std::count(segment.begin(), segment.end(), ' ') + 1;
      for (int i = 0; i < words; ++i) identity.emplace_back(i, i);
      links.push_back(identity);
    }
    out.push_back(html.render(texts, links));
  }
  return out;
}

std::vector<std::string> segments(const Document& document) {
  std::vector<std::string> all;
  for (const auto& page : document.pages()) {
    const auto page_segments = markup::HtmlPage(page).segments();
    all.insert(all.end(), page_segments.begin(), page_segments.end());
  }
  return all;
}

// Entry `name` of the zip archive `bytes` ("" where it has none).
std::string entry(const std::string& bytes, const std::string& name) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  zip_t* archive = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (!archive) {
    zip_source_free(source);
    return "";
  }
  std::string data;
  zip_stat_t stat;
  if (zip_stat(archive, name.c_str(), 0, &stat) == 0) {
    zip_file_t* file = zip_fopen(archive, name.c_str(), 0);
    data.resize(stat.size);
    zip_fread(file, data.data(), data.size());
    zip_fclose(file);
  }
  zip_discard(archive);
  return data;
}

// A zip archive of `entries` (name, contents), deflated.
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(buffer);
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  for (const auto& [name, contents] : entries) {
    zip_file_add(archive, name.c_str(), zip_source_buffer(archive, contents.data(), contents.size(), 0), 0);
  }
  zip_close(archive);
  zip_source_open(buffer);
  zip_source_seek(buffer, 0, SEEK_END);
  std::string bytes(static_cast<size_t>(zip_source_tell(buffer)), '\0');
  zip_source_seek(buffer, 0, SEEK_SET);
  zip_source_read(buffer, bytes.data(), bytes.size());
  zip_source_close(buffer);
  zip_source_free(buffer);
  return bytes;
}

TEST(Documents, EveryPartWithTextBecomesPagesAndComesBackAsItWas) {
  for (const auto& name : kArchives) {
    const Document document(format_of(name), testing::read_text(kDocumentFixtures / name));
    const auto texts = segments(document);
    ASSERT_GE(texts.size(), 3u) << name;
    // The text the tests put in, wherever the format keeps it.
    const auto joined = [&] {
      std::string all;
      for (const auto& text : texts) all += text + "\n";
      return all;
    }();
    EXPECT_NE(joined.find("the dirty chicken"), std::string::npos) << name << ":\n" << joined;
    if (name != "slides.odp" && name != "slides.pptx") {
      for (const char* part : {"Our sister called the frog.", "Does our doctor write a book?",
                               "Do three chickens bring this hot cake?"}) {
        EXPECT_NE(joined.find(part), std::string::npos) << name << " lacks " << part << ":\n" << joined;
      }
    }
    // Untranslated, every page is read again as it was; upper-cased, every run is upper case.
    const auto same = document.write(translate(document.pages(), [](const std::string& s) { return s; }));
    EXPECT_EQ(Document(format_of(name), same).pages(), document.pages()) << name;
    const auto shouted = Document(format_of(name), document.write(translate(document.pages(), upper)));
    auto expected = texts;
    for (auto& text : expected) text = upper(text);
    EXPECT_EQ(segments(shouted), expected) << name;
  }
}

// Each of `pieces` is in `text`.
void expect_holds(const std::string& text, const std::vector<std::string>& pieces) {
  for (const auto& piece : pieces) EXPECT_NE(text.find(piece), std::string::npos) << piece << "\nnot in:\n" << text;
}

TEST(Documents, WordRunsKeepTheirFormattingLinksAndPlaces) {
  const Document document(Format::kDocx, testing::read_text(kDocumentFixtures / "word.docx"));
  const auto written = document.write(translate(document.pages(), upper));
  const auto body = entry(written, "word/document.xml");
  // Each run's formatting around its own words, the link around its words with its target, the
  // tab, the footnote mark, the picture, the break and the bookmark where they were, a paragraph's
  // properties first, and the italic paragraph italic.
  expect_holds(body, {"<w:r><w:rPr><w:b/></w:rPr><w:t xml:space=\"preserve\">THE FRIENDS</w:t></w:r>",
                      "<w:hyperlink r:id=\"rId4\"><w:r><w:rPr><w:u w:val=\"single\"/></w:rPr>"
                      "<w:t xml:space=\"preserve\">THE DIRTY CHICKEN</w:t></w:r></w:hyperlink>",
                      "OUR SISTER</w:t><w:tab/><w:t xml:space=\"preserve\">CALLED THE FROG.</w:t>",
                      "<w:footnoteReference w:id=\"1\"/>", "<a:blip r:embed=\"rId5\"/>", "<w:br/>",
                      "<w:bookmarkStart w:id=\"0\" w:name=\"felix\"/>",
                      "<w:p><w:pPr><w:jc w:val=\"center\"/></w:pPr><w:r>",
                      "<w:r><w:rPr><w:i/></w:rPr><w:t xml:space=\"preserve\">CAN THEY LOOK FOR SOPHIE?</w:t></w:r>"});
  EXPECT_LT(body.rfind("</w:p>"), body.find("<w:sectPr>")) << body;
  expect_holds(entry(written, "word/header1.xml"), {"I HOPE THAT THEY FORGET OUR SMALL GIFTS."});
  expect_holds(entry(written, "word/footnotes.xml"), {"DOES OUR DOCTOR WRITE A BOOK?", "<w:separator/>"});
  // What holds no text is copied as it was.
  const auto original = testing::read_text(kDocumentFixtures / "word.docx");
  for (const char* part : {"[Content_Types].xml", "_rels/.rels", "word/_rels/document.xml.rels", "word/media/dot.png"}) {
    EXPECT_EQ(entry(written, part), entry(original, part)) << part;
  }
}

TEST(Documents, OpenDocumentSpansLinksNotesAndFramesStay) {
  const Document document(Format::kOdt, testing::read_text(kDocumentFixtures / "text.odt"));
  const auto written = document.write(translate(document.pages(), upper));
  // The note's citation is not text to translate; the note's own paragraph is.
  expect_holds(entry(written, "content.xml"),
               {"<text:span text:style-name=\"T1\">THE DIRTY CHICKEN</text:span>",
                "<text:a xlink:type=\"simple\" xlink:href=\"https://example.org/frog\">THE FROG</text:a>",
                "OUR SISTER<text:tab/>CALLED", "<text:line-break/>", "<text:note-citation>1</text:note-citation>",
                "<text:p>HAS OUR BROTHER OPENED THE BOTTLE?</text:p>", "xlink:href=\"Pictures/dot.png\""});
  expect_holds(entry(written, "styles.xml"), {"<text:p>FELIX FOUND THE DIRTY CHICKEN.</text:p>"});
  EXPECT_EQ(entry(written, "mimetype"), "application/vnd.oasis.opendocument.text");
}

TEST(Documents, TextFilesKeepTheirLineEndsAndByteOrderMark) {
  const std::string text = "\xEF\xBB\xBFone\r\ntwo\r\n\r\nthree\r\n";
  const Document document(Format::kText, text);
  EXPECT_EQ(document.lines(), (std::vector<std::string>{"one", "two", "", "three"}));
  EXPECT_EQ(document.write({"1", "2", "", "3"}), "\xEF\xBB\xBF" "1\r\n2\r\n\r\n3\r\n");
  EXPECT_EQ(Document(Format::kText, "a\nb").write({"x", "y"}), "x\ny");
  EXPECT_TRUE(Document(Format::kText, "").lines().empty());
  EXPECT_THROW(Document(Format::kText, "a").write({}), std::invalid_argument);
}

TEST(Documents, BadFilesAreRefusedNamingTheCause) {
  const auto refused = [](Format format, const std::string& bytes, const std::string& cause, Limits limits = {}) {
    try {
      Document document(format, bytes, limits);
      ADD_FAILURE() << "taken: " << cause;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(cause), std::string::npos) << e.what();
    }
  };
  refused(Format::kDocx, "this is plain text, not a zip", "is not a zip archive");
  refused(Format::kDocx, make_zip({{"hello.txt", "hi"}}), "no word/document.xml: not a Word document");
  refused(Format::kOdt, make_zip({{"mimetype", "application/vnd.oasis.opendocument.text"}}), "no content.xml");
  refused(Format::kDocx, make_zip({{"word/document.xml", "<w:document><w:body>"}}), "word/document.xml is not well-formed XML");
  Limits small;
  small.max_unpacked_bytes = 1 << 20;
  refused(Format::kDocx, make_zip({{"word/document.xml", std::string(2 << 20, ' ')}}), "a zip bomb", small);
  Limits few;
  few.max_entries = 3;
  refused(Format::kDocx, make_zip({{"a", ""}, {"b", ""}, {"c", ""}, {"word/document.xml", "<x/>"}}), "4 entries", few);
  Limits tiny;
  tiny.max_file_bytes = 10;
  refused(Format::kText, "more than ten bytes", "at most 10", tiny);
  refused(Format::kText, "bad \xFF byte", "not valid UTF-8");
  // A damaged archive: its central directory cut off.
  const auto word = testing::read_text(kDocumentFixtures / "word.docx");
  refused(Format::kDocx, word.substr(0, word.size() - 30), "zip archive");
  EXPECT_THROW(format_of("notes.pdf"), InputError);
  EXPECT_THROW(format_of("noextension"), InputError);
  EXPECT_EQ(format_of("Report.DOCX"), Format::kDocx);
  EXPECT_FALSE(extension_known("dir.docx/file"));
}

}  // namespace
}  // namespace trafo::documents
