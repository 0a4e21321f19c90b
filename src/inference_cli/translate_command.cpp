// `trafo translate`: raw sentences in, detokenized translations out, in input order.
// Reading follows docs/design.md "Reading input": translate what has arrived. Every line already
// available is taken without waiting (up to --buffer-lines), then translated and written out:
// a file fills whole batches, an interactive writer gets each line back at once.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "trafo/inference_cli/commands.h"
#include "decode_flags.h"
#include "translate_engines.h"
#include "trafo/data/corpus.h"
#include "trafo/documents/document.h"
#include "trafo/errors.h"
#include "trafo/inference/pages.h"
#include "trafo/inference/translation.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct TranslateOptions {
  inference::RuntimeOptions runtime;
  inference::SearchOptions decode;
  std::string input = "-";     // source sentences, one a line; "-" is standard input
  std::string output = "-";    // translations; "-" is standard output
  int64_t buffer_lines = 2000; // most lines read ahead and sorted by length together
  bool skip_invalid = false;   // invalid UTF-8: an empty line and a warning instead of an error
  bool alignment = false;      // after each translation, " ||| " and its word alignment (Pharaoh)
  std::string target_prefix;   // a file, one line per input line: text each translation begins with ("": none)
  std::string glossary;        // a file of term pairs the translations must use ("": none)
  std::string format = "auto"; // text: a sentence a line; html: one HTML page; document: by extension; auto: by extension
  int64_t max_file_bytes = documents::Limits{}.max_file_bytes;  // --format html or document: the input's limit
  std::string split_sentences = "on";  // on: a line (an HTML run) of several sentences is translated sentence by sentence
  std::string src_lang;        // "": the checkpoint's; a code or auto: the checkpoints are directions (TranslateEngines)
};

// --target-prefix: every line of the file, checked as input is; InputError for a file that is
// not text.
std::vector<std::string> read_prefixes(const std::string& path) {
  auto lines = util::read_lines(path);
  for (size_t i = 0; i < lines.size(); ++i) data::check_utf8(lines[i], path, static_cast<int64_t>(i) + 1);
  return lines;
}

// Lines from a file descriptor, either waiting for the next one or taking only what has arrived.
class LineReader {
 public:
  LineReader(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

  // The next line, waiting for it; false at the end of the input.
  bool read(std::string& line) {
    while (!take(line)) {
      if (eof_) return take_rest(line);
      fill();
    }
    return true;
  }

  // The next line if it has arrived already (poll with a zero timeout); never waits.
  bool read_available(std::string& line) {
    while (!take(line)) {
      if (eof_) return take_rest(line);
      if (!readable()) return false;
      fill();
    }
    return true;
  }

 private:
  bool take(std::string& line) {
    const auto end = buffer_.find('\n', start_);
    if (end == std::string::npos) return false;
    line.assign(buffer_, start_, end - start_);
    start_ = end + 1;
    return true;
  }

  bool take_rest(std::string& line) {  // a last line without '\n'
    if (start_ >= buffer_.size()) return false;
    line.assign(buffer_, start_, std::string::npos);
    start_ = buffer_.size();
    return true;
  }

  bool readable() const {
    pollfd request{fd_, POLLIN, 0};
    return ::poll(&request, 1, 0) > 0;  // POLLIN, or POLLHUP/POLLERR which read() then reports
  }

  void fill() {
    if (start_ > 0) {
      buffer_.erase(0, start_);
      start_ = 0;
    }
    char chunk[1 << 16];
    ssize_t count = 0;
    do {
      count = ::read(fd_, chunk, sizeof chunk);
    } while (count < 0 && errno == EINTR);
    if (count < 0) throw InputError("cannot read " + name_ + ": " + std::strerror(errno));
    if (count == 0) eof_ = true;
    buffer_.append(chunk, static_cast<size_t>(count > 0 ? count : 0));
    // A line is a sentence: one without an end in sight (/dev/zero, a binary file) would take all
    // the memory there is.
    if (buffer_.size() > kMaxLineBytes && buffer_.find('\n') == std::string::npos) {
      throw InputError(name_ + " holds a line longer than " + std::to_string(kMaxLineBytes >> 20) +
                       " MiB: not sentences to translate");
    }
  }

  static constexpr size_t kMaxLineBytes = size_t{1} << 20;

  int fd_;
  std::string name_;
  std::string buffer_;
  size_t start_ = 0;
  bool eof_ = false;
};

// The format the input is read in: --format's, or with auto (and document) its extension's: .html
// and .htm a page, .docx, .pptx, .odt and .odp a document, anything else (with auto) text.
std::string format_of_input(const TranslateOptions& options) {
  if (options.format != "auto" && options.format != "document") return options.format;
  if (options.input == "-") {
    if (options.format == "auto") return "text";
    throw InputError("--format document reads the file --input names: its extension names the format");
  }
  if (options.format == "auto" && !documents::extension_known(options.input)) return "text";
  switch (documents::format_of(options.input)) {
    case documents::Format::kText:
      return "text";
    case documents::Format::kHtml:
      return "html";
    default:
      return "document";
  }
}

// --format html or document: the whole input, at most `limit` bytes.
std::string read_whole(int fd, const std::string& name, size_t limit) {
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t count = ::read(fd, chunk, sizeof chunk);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) throw InputError("cannot read " + name + ": " + std::strerror(errno));
    if (count == 0) return bytes;
    bytes.append(chunk, static_cast<size_t>(count));
    if (bytes.size() > limit) {
      throw InputError(name + " is larger than " + std::to_string(limit) + " bytes, the limit (--max-file-bytes)");
    }
  }
}

// A page or a document read whole and parsed into the pages of text it holds, before the model
// loads, so that a bad file fails at once; InputError naming the input.
struct PagedInput {
  std::optional<documents::Document> document;  // none: an HTML page
  inference::Pages pages;
};

PagedInput read_paged(int fd, const std::string& input_name, const std::string& format, const TranslateOptions& options) {
  const size_t limit = std::min<size_t>(inference::Pages::kMaxBytes, static_cast<size_t>(options.max_file_bytes));
  std::string bytes = read_whole(fd, input_name, limit);
  try {
    if (format == "html") return {std::nullopt, inference::Pages({bytes})};
    documents::Limits limits;
    limits.max_file_bytes = options.max_file_bytes;
    documents::Document document(documents::format_of(options.input), std::move(bytes), limits);
    inference::Pages pages(document.pages());
    return {std::move(document), std::move(pages)};
  } catch (const InputError& e) {
    throw InputError(input_name + ": " + e.what());
  }
}

// A page's (or each page of a document's) runs of text translated as lines, their inline tags
// placed by the translations' word alignments, the file written whole; with --src-lang auto, by the
// engine of the language of its first 2,000 bytes of text.
void translate_paged(const PagedInput& input, const TranslateEngines& engines, bool split, std::ostream& out) {
  const auto& runs = input.pages.lines();
  std::string sample;
  for (size_t i = 0; i < runs.size() && sample.size() < 2000; ++i) sample += runs[i] + " ";
  const auto& engine = engines[engines.of(sample, "the input")];
  for (size_t i = 0; i < runs.size(); ++i) {
    inference::require_target(engine.loaded(), runs[i], "run " + std::to_string(i + 1) + " of the input");
  }
  const auto translated = engine.translate_pages(input.pages, split);
  out << (input.document ? input.document->write(translated) : translated.front());
  out.flush();
  spdlog::info("translated {} runs of text in {} page(s)", runs.size(), translated.size());
}

void write_chunk(std::ostream& out, const std::vector<inference::Translated>& results, int64_t first_index,
                 bool n_best_format, bool alignment) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (!n_best_format) {
      out << results[i].hypotheses.front().text;
      if (alignment) out << " ||| " << inference::pharaoh(results[i].alignment);
      out << '\n';
      continue;
    }
    for (const auto& hypothesis : results[i].hypotheses) {
      char score[32];
      std::snprintf(score, sizeof score, "%.4f", hypothesis.score);
      out << first_index + static_cast<int64_t>(i) << " ||| " << hypothesis.text << " ||| " << score << '\n';
    }
  }
  out.flush();
}

// The options that clash or would do nothing, refused before anything is read.
void check_options(const TranslateOptions& options) {
  inference::validate(options.decode);
  if (options.buffer_lines < 1) throw InputError("--buffer-lines must be 1 or more");
  if (options.alignment && options.decode.n_best > 1) {
    throw InputError("--alignment aligns the best translation of each line: leave out --n-best");
  }
  const auto format = format_of_input(options);
  if (format != "text" &&
      (options.decode.n_best > 1 || options.alignment || !options.target_prefix.empty() || options.skip_invalid)) {
    throw InputError("an HTML page or a document is written whole (--format " + format +
                     "): leave out --n-best, --alignment, --target-prefix and --skip-invalid");
  }
  if (options.max_file_bytes < 1) throw InputError("--max-file-bytes must be 1 or more");
  // A document is written in its own format: x.docx into y.docx.
  if (format == "document" && options.output != "-" &&
      (!documents::extension_known(options.output) ||
       documents::format_of(options.output) != documents::format_of(options.input))) {
    throw InputError("--output " + options.output + ": a document is written in its own format, as " +
                     std::filesystem::path(options.input).extension().string());
  }
  // Sampling draws by a line's place in the input, and prefixes begin lines in order: one engine.
  if (!options.src_lang.empty() && (options.decode.sampling() || !options.target_prefix.empty())) {
    throw InputError("--src-lang translates with one checkpoint per source language: not with --sampling-topk "
                     "or --target-prefix");
  }
  if (!options.glossary.empty() && options.decode.sampling()) {
    throw InputError("a glossary needs the best pieces, not sampled ones: --glossary and --sampling-topk exclude each other");
  }
  std::vector<util::NamedPath> inputs = {{"--input", options.input}, {"--checkpoint", options.runtime.checkpoint}};
  if (!options.target_prefix.empty()) inputs.push_back({"--target-prefix", options.target_prefix});
  if (!options.glossary.empty()) inputs.push_back({"--glossary", options.glossary});
  for (const auto& path : options.runtime.ensemble) inputs.push_back({"--checkpoint", path});
  util::refuse_overwriting("--output", options.output, inputs);
}

// A chunk of input lines made ready to translate: each checked as UTF-8 (or emptied, with
// --skip-invalid), given its engine, and checked for its target language. `first`: the 0-based
// number of its first line. Returns each line's engine.
std::vector<size_t> check_chunk(std::vector<std::string>& chunk, int64_t first, const TranslateEngines& engines,
                                const TranslateOptions& options, const std::string& input_name) {
  std::vector<size_t> engine_of(chunk.size(), 0);
  for (size_t i = 0; i < chunk.size(); ++i) {
    auto& text = chunk[i];
    const int64_t number = first + static_cast<int64_t>(i) + 1;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    try {
      data::check_utf8(text, input_name, number);
    } catch (const InputError& e) {
      if (!options.skip_invalid) throw;
      spdlog::warn("{}; writing an empty line", e.what());
      text.clear();
    }
    const auto where = input_name + " line " + std::to_string(number);
    try {
      engine_of[i] = engines.of(text, where);
    } catch (const InputError& e) {
      if (!options.skip_invalid) throw;
      spdlog::warn("{}; writing an empty line", e.what());
      text.clear();
    }
    inference::require_target(engines[engine_of[i]].loaded(), text, where);
  }
  return engine_of;
}

// Text: the lines as they arrive, a chunk at a time, each chunk's translations written before the
// next is read; a line of several sentences is translated sentence by sentence (not with target
// prefixes, which begin whole lines). Returns the lines translated.
int64_t translate_lines(LineReader& reader, const TranslateEngines& engines, const TranslateOptions& options,
                        const std::vector<std::string>& prefixes, const std::string& input_name, std::ostream& out) {
  const bool split = options.split_sentences == "on" && options.target_prefix.empty();
  int64_t lines_done = 0, sentences_done = 0;
  std::vector<std::string> chunk;
  for (std::string line; reader.read(line);) {
    chunk.assign(1, line);
    while (static_cast<int64_t>(chunk.size()) < options.buffer_lines && reader.read_available(line)) {
      chunk.push_back(line);
    }
    const auto engine_of = check_chunk(chunk, lines_done, engines, options, input_name);
    std::vector<std::string> chunk_prefixes;  // none, or one per line
    if (!options.target_prefix.empty()) {
      const auto needed = static_cast<size_t>(lines_done) + chunk.size();
      if (prefixes.size() < needed) {
        throw InputError("--target-prefix " + options.target_prefix + " has " + std::to_string(prefixes.size()) +
                         " lines, and " + input_name + " more: give one prefix line (empty for none) per input line");
      }
      chunk_prefixes.assign(prefixes.begin() + lines_done, prefixes.begin() + static_cast<std::ptrdiff_t>(needed));
    }
    // Each engine's lines (one engine, but for --src-lang), translated and put back in their places.
    std::vector<inference::Translated> results(chunk.size());
    for (size_t e = 0; e < engines.size(); ++e) {
      std::vector<size_t> rows;
      for (size_t i = 0; i < chunk.size(); ++i) {
        if (engine_of[i] == e) rows.push_back(i);
      }
      if (rows.empty()) continue;
      std::vector<std::string> lines, line_prefixes;
      for (const size_t i : rows) {
        lines.push_back(chunk[i]);
        if (!chunk_prefixes.empty()) line_prefixes.push_back(chunk_prefixes[i]);
      }
      const auto& engine = engines[e];
      const auto sentences = engine.split(lines, split);
      auto done = inference::Translation::join(
          sentences, engine.translate(engine.prepare(sentences.sentences, line_prefixes), options.alignment, sentences_done),
          options.decode.n_best);
      sentences_done += static_cast<int64_t>(sentences.sentences.size());
      for (size_t k = 0; k < rows.size(); ++k) results[rows[k]] = std::move(done[k]);
    }
    write_chunk(out, results, lines_done, options.decode.n_best > 1, options.alignment);
    if (!out) {
      throw RunError("cannot write the translations to " + (options.output == "-" ? "standard output" : options.output));
    }
    lines_done += static_cast<int64_t>(chunk.size());
  }
  if (static_cast<int64_t>(prefixes.size()) > lines_done) {
    throw InputError("--target-prefix " + options.target_prefix + " has " + std::to_string(prefixes.size()) +
                     " lines, and " + input_name + " " + std::to_string(lines_done) +
                     ": give one prefix line (empty for none) per input line");
  }
  return lines_done;
}

int run_translate(const TranslateOptions& options) {
  check_options(options);
  const bool from_stdin = options.input == "-";
  const std::string input_name = from_stdin ? "standard input" : options.input;
  const int fd = from_stdin ? STDIN_FILENO : ::open(options.input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open " + options.input + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() {
      if (fd != STDIN_FILENO) ::close(fd);
    }
  } closer{fd};

  const auto prefixes = options.target_prefix.empty() ? std::vector<std::string>() : read_prefixes(options.target_prefix);
  // The glossary's form is checked before the model loads; its terms are cut by the model's tokenizer.
  const auto glossary = options.glossary.empty() ? inference::Glossary::File{} : inference::read_glossary(options.glossary);
  const auto format = format_of_input(options);
  const auto paged =
      format == "text" ? std::nullopt : std::optional<PagedInput>(read_paged(fd, input_name, format, options));
  const TranslateEngines engines(options.runtime, options.src_lang, options.decode, glossary);
  std::ofstream file;
  std::optional<util::PipeHold> pipe;
  if (options.output != "-") {
    pipe.emplace(options.output);
    file.open(options.output, std::ios::binary);
    if (!file) throw_write_error(options.output, errno);
  }
  std::ostream& out = options.output == "-" ? std::cout : file;
  if (paged) {
    translate_paged(*paged, engines, options.split_sentences == "on", out);
    if (!out) {
      throw RunError("cannot write the translation to " + (options.output == "-" ? "standard output" : options.output));
    }
    return 0;
  }
  LineReader reader(fd, input_name);
  spdlog::info("translated {} lines", translate_lines(reader, engines, options, prefixes, input_name, out));
  return 0;
}

}  // namespace

CommandRunner add_translate_command(CLI::App& app) {
  auto options = std::make_shared<TranslateOptions>();
  CLI::App* command = app.add_subcommand(
      "translate",
      "translate raw sentences, one a line, with a trained model; output in input order, one line per input "
      "line (empty lines stay empty). Lines are taken as they arrive: a file is translated in full batches, "
      "an interactive writer gets each line back at once");
  add_runtime_flags(*command, options->runtime, /*with_precision=*/true, /*ensemble=*/true);
  command->add_option("--input,-i", options->input, "source sentences; - is standard input")->capture_default_str();
  command->add_option("--output,-o", options->output, "translations; - is standard output")->capture_default_str();
  add_decode_flags(*command, options->decode, /*with_n_best=*/true);
  add_language_check_flag(*command, options->decode);
  add_sampling_flags(*command, options->decode);
  command->add_flag("--alignment", options->alignment,
                    "after each translation, ' ||| ' and its word alignment in Pharaoh format (SRC-TGT word "
                    "indices, 0-based, words split at spaces), from the cross-attention of the decoder layers, heads and "
                    "layers averaged (the first model's, in an ensemble)");
  command->add_option("--target-prefix", options->target_prefix,
                      "a file of as many lines as the input: each translation begins with its line's text (the "
                      "target side's pieces, decoded with the model's own probabilities, then continued), as "
                      "CTranslate2's target_prefix; an empty line leaves its translation free");
  command->add_option("--glossary", options->glossary,
                      "a file of terms, 'source term<TAB>target term' a line: where a source term occurs in a line, "
                      "its translation holds the target term (lexically constrained beam search, the beam raised to "
                      "the term pieces + 1, at most 16; docs/guide-translating.md)");
  command
      ->add_option("--split-sentences", options->split_sentences,
                   "on: a line (an HTML run) of several sentences is cut into them (ICU's sentence breaks for the "
                   "model's source language, its abbreviations kept whole), each translated alone and joined with "
                   "the line's own spaces; off: each line whole. Not with --target-prefix, which begins whole lines")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  command
      ->add_option("--format", options->format,
                   "text: a sentence a line; html: the input is one HTML page (or fragment), each block's text "
                   "translated as a line and its inline tags placed around the translation of the words they "
                   "wrapped, by the word alignment (docs/guide-translating.md); document: the --input file by its "
                   "extension (.txt, .html, .htm, .docx, .pptx, .odt, .odp), written whole in its own format, "
                   "formatting, pictures and tables kept; auto: as document for those extensions, else text")
      ->check(CLI::IsMember({"auto", "text", "html", "document"}))
      ->capture_default_str();
  command
      ->add_option("--max-file-bytes", options->max_file_bytes,
                   "the largest page or document taken (an archive's entries may unpack to at most 512 MiB, and "
                   "hold 10,000 entries)")
      ->capture_default_str();
  command->add_option(
      "--src-lang", options->src_lang,
      "with several --checkpoint, each a direction from its own source language (not an ensemble): a code "
      "translates with the checkpoint from that language; auto gives each line (a page or document: its "
      "first 2,000 bytes of text) to the checkpoint of the language found in it (CLD2, and the checkpoints' "
      "own language identifiers where CLD2 cannot tell); a line in another language is an error, or with "
      "--skip-invalid an empty line and a warning");
  command
      ->add_option("--buffer-lines", options->buffer_lines,
                   "most lines read ahead (when already available) and sorted by length together")
      ->capture_default_str();
  command->add_flag("--skip-invalid", options->skip_invalid,
                    "write an empty line (and warn) for a line that is not UTF-8, instead of stopping with an error");
  add_number_checks(*command);
  return [options] { return run_translate(*options); };
}

}  // namespace trafo::cli
