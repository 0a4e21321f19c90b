// `trafo score`: corpus BLEU and chrF of a translation against one or more references, as
// sacreBLEU computes them (docs/design.md "Scope": it scores text, not a model's likelihood of it).
#include <utf8.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "trafo/inference_cli/commands.h"
#include "trafo/errors.h"
#include "trafo/metrics/bleu.h"
#include "trafo/metrics/chrf.h"

namespace trafo::cli {
namespace {

struct ScoreOptions {
  std::vector<std::string> references;  // one file per reference stream, line-aligned
  std::string hypotheses = "-";         // the translation to score; "-" is standard input
  bool json = false;                    // one JSON object on one line instead of text
  int chrf_word_order = 0;              // 0: chrF, 2: chrF++
  bool lowercase = false;               // case-insensitive BLEU and chrF
};

// The lines of `in` split at '\n' only (as sacreBLEU reads files), each checked to be UTF-8.
std::vector<std::string> read_lines(std::istream& in, const std::string& name) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (utf8::find_invalid(line.begin(), line.end()) != line.end()) {
      throw InputError(name + ": invalid UTF-8 on line " + std::to_string(lines.size() + 1));
    }
    lines.push_back(std::move(line));
  }
  if (in.bad()) throw InputError("cannot read " + name);
  return lines;
}

std::vector<std::string> read_file_lines(const std::string& path) {
  if (path == "-") return read_lines(std::cin, "standard input");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open " + path + " (missing or unreadable)");
  return read_lines(in, path);
}

int run_score(const ScoreOptions& options) {
  // chrF++ is 2; every order costs a table of n-grams per sentence.
  if (options.chrf_word_order < 0 || options.chrf_word_order > 10) {
    throw InputError("--chrf-word-order must be between 0 and 10 (chrF++: 2), not " +
                     std::to_string(options.chrf_word_order));
  }
  const std::string hyp_name = options.hypotheses == "-" ? "standard input" : options.hypotheses;
  const std::vector<std::string> hypotheses = read_file_lines(options.hypotheses);
  std::vector<std::vector<std::string>> references;
  for (const auto& path : options.references) {
    if (path == "-") throw InputError("--ref must name a file; standard input is for --hyp");
    references.push_back(read_file_lines(path));
    if (references.back().size() != hypotheses.size()) {
      throw InputError("the hypotheses (" + hyp_name + ") have " +
                       std::to_string(hypotheses.size()) + " lines but the reference " + path +
                       " has " + std::to_string(references.back().size()));
    }
  }

  metrics::BleuOptions bleu_options;
  bleu_options.lowercase = options.lowercase;
  metrics::ChrfOptions chrf_options;
  chrf_options.lowercase = options.lowercase;
  chrf_options.word_order = options.chrf_word_order;
  const auto num_refs = static_cast<int>(references.size());
  const metrics::BleuScore bleu = metrics::corpus_bleu(hypotheses, references, bleu_options);
  const metrics::ChrfScore chrf = metrics::corpus_chrf(hypotheses, references, chrf_options);
  const std::string bleu_signature = metrics::bleu_signature(bleu_options, num_refs);
  const std::string chrf_signature = metrics::chrf_signature(chrf_options, num_refs);

  if (options.json) {
    const nlohmann::json result = {{"bleu", bleu.score},
                                   {"chrf", chrf.score},
                                   {"chrf_name", chrf.name},
                                   {"sentences", hypotheses.size()},
                                   {"nrefs", num_refs},
                                   {"signature", bleu_signature},
                                   {"chrf_signature", chrf_signature},
                                   {"precisions", bleu.precisions},
                                   {"bp", bleu.bp},
                                   {"ratio", bleu.ratio},
                                   {"hyp_len", bleu.sys_len},
                                   {"ref_len", bleu.ref_len},
                                   {"bleu_verbose", metrics::format(bleu)}};
    std::cout << result.dump() << '\n';
  } else {
    std::cout << metrics::format(bleu, 2, bleu_signature) << '\n'
              << metrics::format(chrf, 2, chrf_signature) << '\n';
  }
  std::cout.flush();
  if (!std::cout) throw RunError("cannot write the scores to standard output");
  return 0;
}

}  // namespace

CommandRunner add_score_command(CLI::App& app) {
  auto options = std::make_shared<ScoreOptions>();
  CLI::App* command = app.add_subcommand(
      "score",
      "BLEU and chrF of a translation against references, as sacreBLEU 2 computes them "
      "(13a tokenizer, exp smoothing; chrF2 on characters)");
  command
      ->add_option("--ref,-r", options->references,
                   "reference file, one sentence a line; repeat for several references")
      ->required();
  command
      ->add_option("--hyp,-i", options->hypotheses,
                   "translation to score, line-aligned with the references; - is stdin")
      ->capture_default_str();
  command->add_flag("--json", options->json, "print one JSON object on one line");
  command
      ->add_option("--chrf-word-order", options->chrf_word_order,
                   "word n-gram order of chrF: 0 is chrF, 2 is chrF++")
      ->capture_default_str();
  command->add_flag("--lowercase,-l", options->lowercase, "score case-insensitively");
  return [options] { return run_score(*options); };
}

}  // namespace trafo::cli
