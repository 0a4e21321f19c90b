// The docs stay true to the code: the README is short, every relative link in README.md and
// docs/*.md resolves (anchors too), docs/commands.md is what scripts/command_reference.sh prints
// for the binary under test, and every command of the README's ```sh blocks runs, with tiny
// settings, on a toy corpus (docs/testing.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_support.h"
#include "test_support.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = TRAFO_SOURCE_DIR;

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The markdown files whose links are checked: README.md and docs/*.md.
std::vector<fs::path> markdown_files() {
  std::vector<fs::path> files{kSource / "README.md"};
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A fenced code block starts and ends with a line whose first non-space characters are ```.
bool is_fence(const std::string& line) {
  const auto first = line.find_first_not_of(' ');
  return first != std::string::npos && line.compare(first, 3, "```") == 0;
}

// The line without its inline code spans (`...`), where a link is no link.
std::string without_code_spans(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    if (line[i] != '`') {
      out += line[i++];
      continue;
    }
    size_t ticks = 0;
    while (i + ticks < line.size() && line[i + ticks] == '`') ++ticks;
    const auto close = line.find(std::string(ticks, '`'), i + ticks);
    if (close == std::string::npos) {
      out += line.substr(i);
      break;
    }
    out += ' ';
    i = close + ticks;
  }
  return out;
}

// GitHub's anchor of a heading: lower case, punctuation dropped (but - and _), spaces to hyphens.
std::string anchor_of(const std::string& heading) {
  std::string anchor;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) {
      anchor += static_cast<char>(std::tolower(c));
    } else if (c == ' ') {
      anchor += '-';
    }
  }
  return anchor;
}

// The anchors of a markdown file's headings, outside code blocks; repeated ones get -1, -2, ...
std::set<std::string> anchors_of(const fs::path& file) {
  std::set<std::string> anchors;
  bool in_code = false;
  for (const auto& line : lines_of(read_text(file))) {
    if (is_fence(line)) {
      in_code = !in_code;
      continue;
    }
    if (in_code || !starts_with(line, "#")) continue;
    const auto text_start = line.find_first_not_of('#');
    if (text_start == std::string::npos || line[text_start] != ' ') continue;
    std::string heading = line.substr(text_start + 1);
    heading.erase(std::remove(heading.begin(), heading.end(), '`'), heading.end());
    const auto base = anchor_of(heading);
    auto anchor = base;
    for (int n = 1; anchors.count(anchor) != 0; ++n) anchor = base + "-" + std::to_string(n);
    anchors.insert(anchor);
  }
  return anchors;
}

struct Link {
  int line = 0;
  std::string target;
};

std::vector<Link> links_of(const fs::path& file) {
  static const std::regex link(R"(\]\(([^)\s]+)(\s+"[^"]*")?\))");
  std::vector<Link> links;
  bool in_code = false;
  int number = 0;
  for (const auto& line : lines_of(read_text(file))) {
    ++number;
    if (is_fence(line)) {
      in_code = !in_code;
      continue;
    }
    if (in_code) continue;
    const auto text = without_code_spans(line);
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      links.push_back({number, (*it)[1].str()});
    }
  }
  return links;
}

TEST(Docs, ReadmeIsAtMost200Lines) {
  const auto lines = lines_of(read_text(kSource / "README.md"));
  EXPECT_LE(lines.size(), 200u) << "README.md is read in five minutes: move detail into docs/";
}

// The guides stay timeless: performance.md holds the current figure per topic (the dated history
// is bench/results/'s), design.md the map of the code (the detail is design-notes.md's).
TEST(Docs, PerformanceAndDesignStayWithinTheirBudgets) {
  EXPECT_LE(lines_of(read_text(kSource / "docs" / "performance.md")).size(), 300u)
      << "move dated measurements to bench/results/ and keep the current figure";
  EXPECT_LE(lines_of(read_text(kSource / "docs" / "design.md")).size(), 300u)
      << "move the detail to docs/design-notes.md and keep the map";
}

// Each area's `USES` in CMakeLists.txt, by area name.
std::map<std::string, std::set<std::string>> areas_in_the_build() {
  const std::string text = read_text(kSource / "CMakeLists.txt");
  std::map<std::string, std::set<std::string>> areas;
  const std::regex area(R"(trafo_area\((\w+)([^)]*)\))");
  for (std::sregex_iterator it(text.begin(), text.end(), area), end; it != end; ++it) {
    std::istringstream words((*it)[2].str());
    auto& uses = areas[(*it)[1].str()];
    bool in_uses = false;
    for (std::string word; words >> word;) {
      const bool keyword = std::all_of(word.begin(), word.end(), [](char c) { return std::isupper(c) || c == '_'; });
      if (keyword) {
        in_uses = word == "USES";
      } else if (in_uses) {
        uses.insert(word);
      }
    }
  }
  return areas;
}

// docs/design.md's area table: | `area` | holds | uses |, "none" or a comma-separated list.
std::map<std::string, std::set<std::string>> areas_in_the_docs() {
  std::map<std::string, std::set<std::string>> areas;
  const std::regex row(R"(^\| `(\w+)` \|.*\| ([^|]+) \|$)");
  bool in_table = false;
  for (const auto& line : lines_of(read_text(kSource / "docs" / "design.md"))) {
    if (line == "| area | holds | uses |") in_table = true;
    if (line.empty()) in_table = false;
    std::smatch match;
    if (!in_table || !std::regex_match(line, match, row)) continue;
    auto& uses = areas[match[1].str()];
    std::string list = match[2].str();
    list = list.substr(0, list.find(" ("));  // "none (LibTorch's c10d)"
    std::istringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      item.erase(0, item.find_first_not_of(' '));
      if (item != "none") uses.insert(item);
    }
  }
  return areas;
}

// A new area, or a new arrow between areas, cannot go undocumented: design.md's table names every
// area of the build and what it uses, as CMakeLists.txt says.
TEST(Docs, TheAreaTableIsTheBuilds) {
  const auto built = areas_in_the_build(), documented = areas_in_the_docs();
  ASSERT_GE(built.size(), 15u);
  for (const auto& [area, uses] : built) {
    const auto found = documented.find(area);
    ASSERT_NE(found, documented.end()) << "docs/design.md's area table has no row for " << area;
    EXPECT_EQ(found->second, uses) << "docs/design.md says what " << area << " uses otherwise than CMakeLists.txt";
  }
  EXPECT_EQ(documented.size(), built.size()) << "docs/design.md's area table has an area the build lacks";
}

// The front doors reach the engine through `inference`: serve uses neither the evaluator, nor the
// report pages, nor training code (the build's layering check refuses an include its USES lack).
TEST(Docs, ServeReachesTheEngineThroughInference) {
  const auto built = areas_in_the_build();
  ASSERT_TRUE(built.count("serve") && built.count("inference"));
  const auto& serve = built.at("serve");
  EXPECT_TRUE(serve.count("inference"));
  for (const char* room : {"eval", "report", "train", "run_config", "checkpoint"}) {
    EXPECT_FALSE(serve.count(room)) << "serve uses " << room;
  }
  for (const char* front_door : {"serve", "inference_cli", "cli"}) {
    EXPECT_FALSE(built.at("inference").count(front_door)) << "inference uses " << front_door;
  }
}

// The commands reach decoding and HTML pages through the translation engine alone
// (inference/translation.h): inference_cli uses neither decode nor markup, serve no markup (its
// continuous batching is decode's); the engine's area holds HTML pages.
TEST(Docs, FrontDoorsDecodeThroughTheEngine) {
  const auto built = areas_in_the_build();
  ASSERT_TRUE(built.count("inference_cli") && built.count("serve") && built.count("inference"));
  EXPECT_FALSE(built.at("inference_cli").count("decode")) << "inference_cli uses decode";
  EXPECT_FALSE(built.at("inference_cli").count("markup")) << "inference_cli uses markup";
  EXPECT_FALSE(built.at("serve").count("markup")) << "serve uses markup";
  EXPECT_TRUE(built.at("inference").count("markup"));
}

TEST(Docs, EveryRelativeLinkResolves) {
  int checked = 0;
  for (const auto& file : markdown_files()) {
    for (const auto& link : links_of(file)) {
      const auto where = fs::relative(file, kSource).string() + ":" + std::to_string(link.line) + ": ";
      if (link.target.find("://") != std::string::npos || starts_with(link.target, "mailto:")) continue;
      const auto hash = link.target.find('#');
      const auto path_part = link.target.substr(0, hash);
      const auto anchor = hash == std::string::npos ? std::string() : link.target.substr(hash + 1);
      const auto target = path_part.empty() ? file : (file.parent_path() / path_part).lexically_normal();
      ++checked;
      if (!fs::exists(target)) {
        ADD_FAILURE() << where << link.target << ": no such file " << target;
        continue;
      }
      if (anchor.empty()) continue;
      EXPECT_EQ(target.extension(), ".md") << where << link.target << ": an anchor into a file that is not markdown";
      if (target.extension() != ".md") continue;
      const auto anchors = anchors_of(target);
      EXPECT_EQ(anchors.count(anchor), 1u) << where << link.target << ": no heading with anchor #" << anchor << " in "
                                           << fs::relative(target, kSource).string();
    }
  }
  EXPECT_GT(checked, 20) << "the links were not found";
}

TEST(Docs, AnchorsFollowGithub) {
  EXPECT_EQ(anchor_of("CPU kernel variants (AVX-512)"), "cpu-kernel-variants-avx-512");
  EXPECT_EQ(anchor_of("metrics.jsonl"), "metricsjsonl");
  EXPECT_EQ(anchor_of("Data at scale: the token cache, several corpora, tags"),
            "data-at-scale-the-token-cache-several-corpora-tags");
}

TEST(Docs, CommandReferenceIsCurrent) {
  const auto script = kSource / "scripts" / "command_reference.sh";
  const auto result = run_command(shell_quoted(script.string()) + " " + shell_quoted(TRAFO_BINARY));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto expected = read_text(kSource / "docs" / "commands.md");
  if (result.output == expected) return;
  const auto now = lines_of(result.output);
  const auto written = lines_of(expected);
  size_t line = 0;
  while (line < now.size() && line < written.size() && now[line] == written[line]) ++line;
  ADD_FAILURE() << "docs/commands.md differs from what the binary's --help gives, from line " << line + 1 << ":\n"
                << "  docs/commands.md: " << (line < written.size() ? written[line] : "(end)") << "\n"
                << "  --help now:       " << (line < now.size() ? now[line] : "(end)") << "\n"
                << "regenerate it: scripts/command_reference.sh build/trafo > docs/commands.md";
}

// --- The README's commands. ---

// The logical commands of the README's ```sh blocks: continued lines joined, blank and comment
// lines left out.
std::vector<std::string> readme_commands() {
  std::vector<std::string> commands;
  bool in_sh = false;
  std::string pending;
  for (const auto& line : lines_of(read_text(kSource / "README.md"))) {
    if (is_fence(line)) {
      if (!in_sh) {
        auto info = line.substr(line.find("```") + 3);
        info.erase(0, info.find_first_not_of(' '));
        in_sh = info == "sh" || info == "bash" || info == "shell";
      } else {
        in_sh = false;
      }
      continue;
    }
    if (!in_sh) continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    auto command = pending + line;
    pending.clear();
    const auto first = command.find_first_not_of(' ');
    if (first == std::string::npos || command[first] == '#') continue;
    commands.push_back(command.substr(first));
  }
  return commands;
}

// The command without a trailing # comment (a # outside quotes, after a space).
std::string without_comment(const std::string& command) {
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && i > 0 && command[i - 1] == ' ') {
      auto kept = command.substr(0, i);
      kept.erase(kept.find_last_not_of(' ') + 1);
      return kept;
    }
  }
  return command;
}

// Replaces `word` where it stands as a word of its own (no letter, digit or _ on either side).
std::string replace_word(std::string text, const std::string& word, const std::string& by) {
  const auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at)) {
    const bool alone = (at == 0 || !is_word(text[at - 1])) &&
                       (at + word.size() == text.size() || !is_word(text[at + word.size()]));
    if (!alone) {
      at += word.size();
      continue;
    }
    text.replace(at, word.size(), by);
    at += by.size();
  }
  return text;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST(Docs, ReadmeCommandsRun) {
  // What a README command line stands for: DIR is a corpus folder (here a small toy corpus),
  // build/trafo the binary under test, configs/ the repository's; commands run in a fresh folder.
  const auto work = make_temp_dir("docs-readme");
  const auto data = work / "data";
  const auto corpus = run_trafo("toy-corpus --out " + shell_quoted(data.string()) + " --train 2000 --dev 20 --test 20");
  ASSERT_EQ(corpus.exit_code, 0) << corpus.errors;
  const std::string tiny =
      " --max-steps 2 --vocab-size 400 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
      " --valid-max-sentences 5 --threads 1";

  int ran = 0;
  int trained = 0;
  for (const auto& written : readme_commands()) {
    // The setup, quickstart and test scripts build the project: quickstart_smoke and CI run those.
    if (starts_with(written, "./scripts/") || starts_with(written, "scripts/")) continue;
    auto command = without_comment(written);
    const bool trains = command.find("build/trafo train") != std::string::npos;
    command = replace_word(command, "DIR", shell_quoted(data.string()));
    command = replace_all(command, "build/trafo ", shell_quoted(TRAFO_BINARY) + " ");
    command = replace_all(command, "configs/", shell_quoted((kSource / "configs").string() + "/"));
    if (trains) {
      command += tiny;
      ++trained;
    }
    const auto result = run_command("cd " + shell_quoted(work.string()) + " && " + command);
    EXPECT_EQ(result.exit_code, 0) << "README command: " << written << "\nran as: " << command << "\nstderr:\n"
                                   << result.errors;
    ++ran;
  }
  EXPECT_GE(trained, 1) << "the README shows no trafo train command";
  EXPECT_GE(ran, 4) << "the README's ```sh blocks were not found";
}

}  // namespace
}  // namespace trafo::testing
