#include "training_data.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/piece_links.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::train {
using run_config::TrainConfig;
using run_config::DataFiles;
using run_config::data_files;

std::filesystem::path cache_folder(const TrainConfig& c) {
  std::filesystem::path folder;
  auto variable = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  if (!c.data.cache_dir.empty()) {
    folder = c.data.cache_dir;
  } else if (!variable("TRAFO_CACHE_DIR").empty()) {
    folder = variable("TRAFO_CACHE_DIR");
  } else if (!variable("XDG_CACHE_HOME").empty()) {
    folder = std::filesystem::path(variable("XDG_CACHE_HOME")) / "trafo";
  } else if (!variable("HOME").empty()) {
    folder = std::filesystem::path(variable("HOME")) / ".cache" / "trafo";
  } else {
    folder = std::filesystem::path(c.run.run_dir) / "cache";
  }
  data::check_cache_folder(folder);
  return folder;
}

std::vector<int64_t> check_data(const DataFiles& files, const std::filesystem::path& cache) {
  std::vector<int64_t> lines;
  for (const auto& corpus : files.train) {
    lines.push_back(data::check_parallel_files_once(cache, corpus.src, corpus.tgt));
    if (!corpus.alignment.empty()) data::check_text_file(corpus.alignment);
  }
  data::check_parallel_files(files.dev_src, files.dev_tgt);
  if (!files.test_src.empty()) data::check_parallel_files(files.test_src, files.test_tgt);
  return lines;
}

std::vector<std::string> corpus_tags(const DataFiles& paths) {
  std::vector<std::string> tags;
  for (const auto& corpus : paths.train) {
    if (!corpus.tag.empty() && std::find(tags.begin(), tags.end(), corpus.tag) == tags.end())
      tags.push_back(corpus.tag);
  }
  return tags;
}

data::TokenizerOptions vocabulary_options(const TrainConfig& c, const DataFiles& paths, int threads) {
  auto vocab = c.vocab;
  vocab.threads = threads;
  vocab.reserved = corpus_tags(paths);
  return vocab;
}

std::string learn_vocabulary(const data::TokenizerOptions& vocab, const DataFiles& paths,
                             const std::vector<int64_t>& lines, const std::filesystem::path& cache) {
  nlohmann::json key = {{"format", 1},
                        {"size", vocab.vocab_size},
                        {"type", vocab.model_type},
                        {"normalization", vocab.normalization},
                        {"coverage", vocab.character_coverage},
                        {"sample", vocab.max_sentences},
                        {"reserved", vocab.reserved}};
  std::vector<data::WeightedFiles> corpora;
  for (size_t i = 0; i < paths.train.size(); ++i) {
    const auto& corpus = paths.train[i];
    key["corpora"].push_back({data::file_stamp(corpus.src), data::file_stamp(corpus.tgt), corpus.weight});
    corpora.push_back({corpus.src, corpus.tgt, corpus.weight, lines[i]});
  }
  const auto text = key.dump();
  const auto path = cache / fmt::format("vocab-{:016x}.model", XXH3_64bits(text.data(), text.size()));
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) {
    try {
      auto bytes = util::read_file(path);
      data::Tokenizer::from_bytes(bytes);
      spdlog::info("reusing the vocabulary learned before from the same files and vocabulary options: {}",
                   path.string());
      return bytes;
    } catch (const InputError& e) {
      spdlog::warn("learning the vocabulary again: {} cannot be read ({})", path.string(), e.what());
    }
  }
  const auto started = std::chrono::steady_clock::now();
  auto sample = data::vocabulary_sample(corpora, vocab.max_sentences);
  const auto sentences = sample.size();
  const auto bytes = data::Tokenizer::train_on_lines(std::move(sample), vocab).to_bytes();
  util::write_file_atomically(path, bytes, util::Special::kReplace);
  spdlog::info("learned the vocabulary from {} sentences in {:.1f} s, kept for later runs: {}", sentences,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), path.string());
  return bytes;
}

std::vector<int> tag_ids(const DataFiles& paths, const data::Tokenizer& tokenizer) {
  std::vector<int> ids;
  for (size_t i = 0; i < paths.train.size(); ++i) {
    const auto& tag = paths.train[i].tag;
    ids.push_back(tag.empty() ? -1 : tokenizer.reserved_id(tag));
    if (!tag.empty() && ids.back() < 0) {
      throw InputError("corpus " + std::to_string(i + 1) + "'s tag " + tag +
                       " is not a reserved piece of the run's tokenizer, which keeps the tags it was learned with");
    }
  }
  return ids;
}

std::vector<data::CachedCorpus> load_corpora(const TrainConfig& c, const DataFiles& paths,
                                             const std::vector<int64_t>& lines, const data::Tokenizer& tokenizer, const std::vector<int>& tags,
                                             const std::filesystem::path& cache, int threads, Replicas& replicas,
                                             int64_t sample) {
  // + eos (source) or bos (target) must fit the model's positions, whatever --max-length says.
  const int64_t longest =
      c.data.max_length > 0 ? std::min(c.data.max_length, c.model.max_positions - 1) : c.model.max_positions - 1;
  std::vector<int> tag_pieces;
  for (const int id : tags) {
    if (id >= 0) tag_pieces.push_back(id);
  }
  std::vector<data::CachedCorpus> corpora;
  auto open_all = [&] {
    for (size_t i = 0; i < paths.train.size(); ++i) {
      const data::CorpusOptions options{longest,
                                        c.data.max_length_ratio,
                                        tags[i],
                                        tag_pieces,
                                        sample,
                                        sample > 0 ? c.data.subword_alpha : 0.0,
                                        c.data.all_caps_every,
                                        c.data.title_case_every};
      const auto& files = paths.train[i];
      corpora.push_back(data::open_token_cache(cache, files.src, files.tgt, tokenizer, options, threads));
      if (files.alignment.empty() || !run_config::guided(c)) continue;
      auto& opened = corpora.back();
      opened.corpus.set_links(std::make_shared<const data::PieceLinks>(data::open_piece_links(
          cache, opened.file, files.src, files.tgt, opened.corpus, tokenizer, files.alignment, lines[i], tags[i])));
    }
  };
  if (replicas.is_main()) open_all();
  replicas.share("token caches", "");
  if (!replicas.is_main()) open_all();
  return corpora;
}

std::vector<std::vector<data::CachedCorpus>> load_samples(const TrainConfig& c, const DataFiles& paths,
                                                          const std::vector<int64_t>& lines,
                                                          const data::Tokenizer& tokenizer, const std::vector<int>& tags,
                                                          const std::filesystem::path& cache, int threads,
                                                          Replicas& replicas) {
  std::vector<std::vector<data::CachedCorpus>> samples;
  if (c.data.subword_alpha <= 0) return samples;
  for (int64_t sample = 1; sample <= c.data.subword_samples; ++sample) {
    samples.push_back(load_corpora(c, paths, lines, tokenizer, tags, cache, threads, replicas, sample));
  }
  return samples;
}

std::vector<double> draw_weights(const DataFiles& paths, const std::vector<data::CachedCorpus>& corpora,
                                 double temperature) {
  // pairs^(1/T) relative to the largest corpus's: at most 1, so a small T cannot overflow.
  double largest = 1.0;
  for (const auto& cached : corpora) largest = std::max(largest, static_cast<double>(cached.corpus.size()));
  std::vector<double> weights;
  for (size_t i = 0; i < corpora.size(); ++i) {
    const double pairs = static_cast<double>(corpora[i].corpus.size());
    weights.push_back(paths.train[i].weight * (temperature > 0 ? std::pow(pairs / largest, 1.0 / temperature) : 1.0));
  }
  // A corpus that is (almost) never drawn makes an epoch of the first corpus endless and its
  // batches per epoch overflow: each corpus gets at least kMinCorpusShare of the draw.
  const auto scaled = data::scaled_weights(weights);
  double total = 0.0;
  for (const double weight : scaled) total += weight;
  for (size_t i = 0; i < corpora.size() && corpora.size() > 1; ++i) {
    const double share = scaled[i] / total;
    if (share >= kMinCorpusShare) continue;
    throw InputError(fmt::format(
        "corpus {} ({} / {}) would get {:.3g}% of the pairs served (weight {}{}); each corpus needs at least {}%: "
        "give it a larger weight{}",
        i + 1, paths.train[i].src, paths.train[i].tgt, 100.0 * share, paths.train[i].weight,
        temperature > 0 ? fmt::format(" x pairs^(1/{}) with --sampling-temperature {}", temperature, temperature) : "",
        100.0 * kMinCorpusShare, temperature > 0 ? " or a larger --sampling-temperature" : ""));
  }
  return weights;
}

data::Batcher make_batcher(const std::vector<data::CachedCorpus>& corpora,
                           const std::vector<std::vector<data::CachedCorpus>>& samples, const DataFiles& paths,
                           double temperature, data::BatcherOptions options, const data::StreamPosition& start) {
  std::vector<data::Segmentations> sources(corpora.size());
  for (size_t i = 0; i < corpora.size(); ++i) {
    if (samples.empty()) sources[i].push_back(&corpora[i].corpus);
    for (const auto& sample : samples) sources[i].push_back(&sample[i].corpus);
  }
  return data::Batcher(std::move(sources), draw_weights(paths, corpora, temperature), options, start);
}

LeakReport find_leaks(const DataFiles& paths, const data::Tokenizer& tokenizer,
                      const std::vector<data::CachedCorpus>& corpora) {
  std::vector<const data::Corpus*> training;
  for (const auto& cached : corpora) training.push_back(&cached.corpus);
  auto check = [&](const std::string& name, const std::string& source) {
    auto overlap = data::find_overlap(source, tokenizer, training);
    if (!overlap.in_training.empty()) {
      std::string lines;
      for (size_t i = 0; i < std::min<size_t>(5, overlap.in_training.size()); ++i) {
        lines += (i > 0 ? ", " : "") + std::to_string(overlap.in_training[i]);
      }
      if (overlap.in_training.size() > 5) lines += ", ...";
      spdlog::warn(
          "{} of {} {} pairs have a source sentence that is also in the training data ({} lines {}): "
          "scores on them overstate the model",
          overlap.in_training.size(), overlap.lines, name, source, lines);
    }
    return overlap;
  };
  LeakReport report;
  report.dev = check("dev", paths.dev_src);
  if (!paths.test_src.empty()) report.test = check("test", paths.test_src);
  return report;
}

namespace {

data::Tokenizer make_tokenizer(const TrainConfig& c, const TrainingFiles& files, const ResumePoint& resume, int threads,
                               Replicas& replicas) {
  std::string bytes = resume.saved ? resume.saved->tokenizer : resume.initial ? resume.initial->tokenizer : "";
  if (!resume.saved && !resume.initial) {
    if (replicas.is_main() && !c.vocab_from.empty()) {
      bytes = checkpoint::load(c.vocab_from, /*with_training_state=*/false).tokenizer;
      spdlog::info("tokenizer: {}'s ({} pieces), as --vocab-from asks", c.vocab_from,
                   data::Tokenizer::from_bytes(bytes).vocab_size());
    } else if (replicas.is_main()) {
      bytes = learn_vocabulary(vocabulary_options(c, files.paths, threads), files.paths, files.train_lines, files.cache);
    }
    bytes = replicas.share("tokenizer", bytes);
  }
  return data::Tokenizer::from_bytes(bytes);
}

}  // namespace

TrainingFiles::TrainingFiles(const TrainConfig& c)
    : cache(cache_folder(c)), paths(data_files(c)), train_lines(check_data(paths, cache)) {}

TrainingData::TrainingData(const TrainConfig& c, const TrainingFiles& files, const ResumePoint& resume, int threads,
                           Replicas& replicas)
    : tokenizer(make_tokenizer(c, files, resume, threads, replicas)),
      tags(tag_ids(files.paths, tokenizer)),
      corpora(load_corpora(c, files.paths, files.train_lines, tokenizer, tags, files.cache, threads, replicas)),
      samples(load_samples(c, files.paths, files.train_lines, tokenizer, tags, files.cache, threads, replicas)) {}

int64_t TrainingData::train_pairs() const {
  int64_t pairs = 0;
  for (const auto& corpus : corpora) pairs += corpus.corpus.size();
  return pairs;
}

}  // namespace trafo::train
