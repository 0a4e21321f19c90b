// trafo toy-corpus: writes the bundled toy English→German corpus (data/README.md).
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "trafo/errors.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::cli {
namespace {

struct ToyCorpusSettings {
  std::filesystem::path out;  // the folder that receives {train,dev,test}.{en,de}
  bool force = false;         // replace files of those names that are already there
  bool alignments = false;    // also DIR/{train,dev,test}.align: the lexicon's word links, Pharaoh
  data::ToyCorpusOptions corpus;
};

double percent(int64_t part, size_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// DIR/NAME.align: for each pair, the links toy_reference_alignment is sure of, "0-0 2-3 ...".
void write_alignments(const std::filesystem::path& path, const std::vector<data::SentencePair>& pairs) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& pair : pairs) {
    std::string line;
    for (const auto& [s, t] : data::toy_reference_alignment(pair.source, pair.target)) {
      line += (line.empty() ? "" : " ") + std::to_string(s) + "-" + std::to_string(t);
    }
    out << line << '\n';
  }
  if (!out.flush()) throw InputError("cannot write " + path.string());
}

}  // namespace

CommandRunner add_toy_corpus_command(CLI::App& app) {
  auto settings = std::make_shared<ToyCorpusSettings>();
  CLI::App* command = app.add_subcommand(
      "toy-corpus",
      "Write the toy English-German corpus (a generated language pair that needs attention; "
      "see data/README.md) as DIR/{train,dev,test}.{en,de}");
  command->add_option("--out", settings->out, "Folder to write into (created if missing)")
      ->required()
      ->type_name("DIR");
  command->add_flag("--force", settings->force, "replace DIR's train/dev/test files when they exist");
  command->add_flag("--alignments", settings->alignments,
                    "also write DIR/{train,dev,test}.align: for each pair, the word links the lexicon is sure of "
                    "(content words that occur once, with one matching German word), Pharaoh 'SRC-TGT', 0-based");
  command->add_option("--train", settings->corpus.train, "Training pairs")->capture_default_str();
  command->add_option("--dev", settings->corpus.dev, "Development pairs")->capture_default_str();
  command->add_option("--test", settings->corpus.test, "Test pairs")->capture_default_str();
  command
      ->add_option("--seed", settings->corpus.seed,
                   "Random seed; the same seed gives the same corpus")
      ->capture_default_str();

  return [settings]() -> int {
    // A folder of real data is never overwritten by mistake (`--out data/wmt`).
    for (const char* name : {"train.en", "train.de", "dev.en", "dev.de", "test.en", "test.de", "train.align",
                             "dev.align", "test.align"}) {
      if (!settings->alignments && std::string(name).find(".align") != std::string::npos) continue;
      const auto path = settings->out / name;
      std::error_code error;
      if (!settings->force && std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
        throw InputError(path.string() + " exists; use --force to replace it");
      }
    }
    // Throws trafo::InputError for negative or too large counts, or a folder it cannot write.
    const data::ToySplits splits = data::generate_toy_corpus(settings->corpus);
    data::write_toy_splits(settings->out, splits);
    if (settings->alignments) {
      write_alignments(settings->out / "train.align", splits.train);
      write_alignments(settings->out / "dev.align", splits.dev);
      write_alignments(settings->out / "test.align", splits.test);
    }
    spdlog::info("wrote {} train, {} dev and {} test pairs (seed {}) to {}", splits.train.size(),
                 splits.dev.size(), splits.test.size(), settings->corpus.seed,
                 settings->out.string());
    spdlog::info("reordered against a word-for-word translation: train {:.1f}%, dev {:.1f}%, "
                 "test {:.1f}%",
                 percent(splits.train_reordered, splits.train.size()),
                 percent(splits.dev_reordered, splits.dev.size()),
                 percent(splits.test_reordered, splits.test.size()));
    return 0;
  };
}

}  // namespace trafo::cli
