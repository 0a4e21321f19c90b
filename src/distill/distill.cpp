#include "trafo/distill/distill.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "teacher_translations.h"
#include "trafo/errors.h"
#include "trafo/inference/loaded_model.h"
#include "trafo/json.h"
#include "trafo/run_config/run_identity.h"
#include "trafo/train/log_file_copy.h"
#include "trafo/train/run_folder.h"
#include "trafo/util/files.h"
#include "trafo/util/hex.h"

namespace trafo::distill {
namespace {

// What stage 1's translations are a function of: the teacher's files, each corpus's source file,
// and the search. A rerun whose identity differs would mix two teachers' chunks.
struct Identity {
  nlohmann::json json;
  std::string hash() const {
    const auto text = json.dump();
    return util::hex(XXH3_64bits(text.data(), text.size()));
  }
};

// The file's bytes and their XXH3, read a block at a time.
nlohmann::json file_identity(const std::string& path) {
  util::check_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  std::vector<char> block(1 << 20);
  uint64_t bytes = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = in.gcount();
    XXH3_64bits_update(&state, block.data(), static_cast<size_t>(got));
    bytes += static_cast<uint64_t>(got);
  }
  return {{"file", path}, {"bytes", bytes}, {"xxh3", util::hex(XXH3_64bits_digest(&state))}};
}

// An identity without its file names: a teacher or corpus moved or copied is the same one.
nlohmann::json same_content(nlohmann::json identity) {
  for (const auto* list : {"teachers", "corpora"}) {
    if (!identity.contains(list) || !identity.at(list).is_array()) continue;
    for (auto& file : identity.at(list)) file.erase("file");
  }
  return identity;
}

// The differences between two identities, for the one-line refusal: "teacher 1", "corpus 2", "beam".
std::string differences(const nlohmann::json& kept, const nlohmann::json& now) {
  std::vector<std::string> out;
  for (const auto& [key, value] : now.items()) {
    if (!kept.contains(key) || same_content({{key, kept.at(key)}}) == same_content({{key, value}})) continue;
    if (!value.is_array()) {
      out.push_back(fmt::format("{} {} then, {} now", key, kept.at(key).dump(), value.dump()));
      continue;
    }
    for (size_t i = 0; i < std::max(value.size(), kept.at(key).size()); ++i) {
      const auto then = i < kept.at(key).size() ? kept.at(key)[i] : nlohmann::json();
      const auto now_i = i < value.size() ? value[i] : nlohmann::json();
      auto content = [](nlohmann::json file) {
        if (file.is_object()) file.erase("file");
        return file;
      };
      if (content(then) == content(now_i)) continue;
      out.push_back(fmt::format("{} {}: {} then, {} now", key, i + 1,
                                then.is_object() ? then.value("file", "?") + " " + then.value("xxh3", "?") : then.dump(),
                                now_i.is_object() ? now_i.value("file", "?") + " " + now_i.value("xxh3", "?") : now_i.dump()));
    }
  }
  return run_config::join_differences(out);
}

// The corpora the teacher translates: the run's training corpora, in one language pair.
std::vector<run_config::CorpusSpec> corpora_of(const run_config::TrainConfig& c) {
  auto corpora = run_config::data_files(c).train;
  for (const auto& corpus : corpora) {
    const auto pair = run_config::source_language(corpus, c.data) + "-" + run_config::target_language(corpus, c.data);
    if (pair != c.data.src_lang + "-" + c.data.tgt_lang) {
      throw InputError("corpus " + corpus.src + " is " + pair + ": trafo distill takes one language pair, --src-lang " +
                       c.data.src_lang + " --tgt-lang " + c.data.tgt_lang);
    }
  }
  return corpora;
}

inference::LoadedModel load_teacher(const run_config::TrainConfig& c, const DistillOptions& options,
                                    const std::string& precision) {
  inference::RuntimeOptions runtime;
  runtime.checkpoint = options.teachers.front();
  runtime.ensemble.assign(options.teachers.begin() + 1, options.teachers.end());
  runtime.device = options.device;
  runtime.threads = c.machine.threads;
  runtime.precision = precision;
  runtime.tgt_lang = c.data.tgt_lang;
  auto loaded = inference::load_for_translation(runtime);
  const auto& src = loaded.inference.src_lang;
  if (!src.empty() && src != c.data.src_lang) {
    throw InputError("teacher " + options.teachers.front() + " translates from " + src + ", not from --src-lang " +
                     c.data.src_lang);
  }
  return loaded;
}

// Stage 2: the distilled pairs of one corpus, those the teacher left empty and then its least likely
// `share` dropped, written as DISTILL/corpusC.{src,tgt}. Returns the lines kept and those left empty.
std::pair<int64_t, int64_t> keep_likely(const std::vector<std::string>& sources, const Chunks& chunks, double share,
                                        const std::filesystem::path& src_out, const std::filesystem::path& tgt_out) {
  std::vector<Distilled> lines;
  for (int64_t chunk = 0; chunk < chunks.count(); ++chunk) {
    auto read = chunks.read(chunk);
    if (read.empty()) throw RunError("distill: chunk " + std::to_string(chunk + 1) + " went missing after stage 1");
    lines.insert(lines.end(), std::make_move_iterator(read.begin()), std::make_move_iterator(read.end()));
  }
  std::vector<size_t> order(lines.size());
  std::iota(order.begin(), order.end(), 0);
  auto worse = [&](size_t a, size_t b) {
    const double x = lines[a].log_prob_per_piece, y = lines[b].log_prob_per_piece;
    if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
    return x < y || (x == y && a < b);
  };
  std::stable_sort(order.begin(), order.end(), worse);
  const auto dropped = static_cast<size_t>(std::floor(share * static_cast<double>(lines.size())));
  std::vector<bool> keep(lines.size(), true);
  for (size_t i = 0; i < dropped; ++i) keep[order[i]] = false;
  int64_t empty = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].text.empty() && !sources[i].empty()) {
      empty += keep[i] ? 1 : 0;
      keep[i] = false;
    }
  }
  if (std::none_of(keep.begin(), keep.end(), [](bool k) { return k; })) {
    throw InputError("the teacher's translations of " + src_out.filename().string() +
                     "'s sources are all empty: it has not learned to translate yet (train it longer)");
  }
  std::string src, tgt;
  int64_t kept = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!keep[i]) continue;
    src += sources[i] + "\n";
    tgt += lines[i].text + "\n";
    ++kept;
  }
  util::write_file_atomically(src_out, src, util::Special::kReplace);
  util::write_file_atomically(tgt_out, tgt, util::Special::kReplace);
  return {kept, empty};
}

void remove_stale_temporaries(const std::filesystem::path& folder) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().filename().string().find(".tsv.tmp-") != std::string::npos) util::remove_tree(entry.path());
  }
}

}  // namespace

void validate(const DistillOptions& o) {
  if (o.teachers.empty()) throw InputError("--teacher: give the teacher's checkpoint (several: an ensemble)");
  if (o.beam < 1 || o.beam > 64) throw InputError("--distill-beam must be 1 to 64, not " + std::to_string(o.beam));
  if (!(o.filter >= 0.0 && o.filter < 1.0)) {
    throw InputError(fmt::format("--distill-filter must be at least 0 and under 1, not {}", o.filter));
  }
  if (o.mix != "none" && o.mix != "original") throw InputError("--distill-mix must be none or original, not " + o.mix);
  if (!(o.mix_weight > 0.0 && std::isfinite(o.mix_weight))) {
    throw InputError(fmt::format("--distill-mix-weight must be a finite number above 0, not {}", o.mix_weight));
  }
  if (o.chunk_lines < 1 || o.chunk_lines > 10'000'000) {
    throw InputError("--distill-chunk-lines must be 1 to 10,000,000, not " + std::to_string(o.chunk_lines));
  }
}

train::TrainResult distill(run_config::TrainConfig c, const DistillOptions& options,
                           const std::atomic<bool>* stop_requested) {
  validate(options);
  run_config::validate(c);
  if (c.parallel.nproc > 1) {
    throw InputError("trafo distill runs one process: leave out --nproc (a student may go on with trafo train --nproc)");
  }
  const std::filesystem::path run = c.run.run_dir, folder = run / "distill", chunk_folder = folder / "chunks";
  const auto identity_path = folder / "stage1.json";
  const bool start_over = c.run.no_resume && c.run.overwrite;
  std::error_code error;
  if (!start_over && !std::filesystem::exists(identity_path, error) &&
      (!train::RunFolder::checkpoints_in(run).empty() || std::filesystem::exists(run / "config.toml", error))) {
    throw InputError("run folder " + run.string() +
                     " holds a run of trafo train, not of trafo distill: use another --run-dir");
  }
  const auto corpora = corpora_of(c);
  std::vector<std::vector<std::string>> sources;
  for (const auto& corpus : corpora) {
    sources.push_back(util::read_lines(corpus.src));
    if (sources.back().empty()) throw InputError("corpus " + corpus.src + " is empty: nothing to distill");
  }
  // Stage 1's identity: the teacher, the sources, the search; a precision left to auto is the one
  // the first run chose (timed, it might choose otherwise the next time). The teacher is loaded, and
  // so checked, before anything is written.
  std::optional<nlohmann::json> kept;
  if (!start_over && std::filesystem::exists(identity_path, error)) {
    kept = parse_json(util::read_file(identity_path), identity_path.string());
  }
  std::string precision = options.precision;
  if (precision == "auto" && kept && kept->contains("precision")) precision = kept->at("precision").get<std::string>();
  spdlog::info("distill: loading the teacher{} ({})", options.teachers.size() > 1 ? "s, an ensemble" : "",
               fmt::join(options.teachers, ", "));
  auto loaded = std::make_shared<const inference::LoadedModel>(load_teacher(c, options, precision));
  {
    train::RunFolder lock(run, /*lock=*/true);
    if (start_over) util::remove_tree(folder);
    std::filesystem::create_directories(chunk_folder, error);
    if (error) throw_write_error(chunk_folder.string(), error.value());
    train::LogFileCopy log(run / "train.log");
    remove_stale_temporaries(chunk_folder);
    Identity identity;
    identity.json["teachers"] = nlohmann::json::array();
    for (const auto& teacher : options.teachers) identity.json["teachers"].push_back(file_identity(teacher));
    identity.json["corpora"] = nlohmann::json::array();
    for (size_t i = 0; i < corpora.size(); ++i) {
      auto file = file_identity(corpora[i].src);
      file["lines"] = sources[i].size();
      identity.json["corpora"].push_back(file);
    }
    inference::SearchOptions search;
    search.beam = options.beam;
    search.batch_tokens = options.batch_tokens;
    identity.json["beam"] = search.beam;
    identity.json["length_penalty"] = search.length_penalty;
    identity.json["max_length"] = {search.max_length_a, search.max_length_b};
    identity.json["chunk_lines"] = options.chunk_lines;
    identity.json["precision"] = loaded->bf16 ? "bf16" : "fp32";
    if (kept && same_content(*kept) != same_content(identity.json)) {
      throw InputError("run folder " + run.string() + " was distilled with another teacher, corpus or search (" +
                       differences(*kept, identity.json) +
                       "): rerun as before, add --no-resume --overwrite to distill again from scratch, or use another "
                       "--run-dir");
    }
    if (!kept) util::write_file_atomically(identity_path, identity.json.dump(2) + "\n", util::Special::kReplace);

    // Stage 1: the teacher's translations, chunk by chunk.
    const inference::Translation engine(loaded, search);
    std::vector<Chunks> chunks;
    for (size_t i = 0; i < corpora.size(); ++i) {
      chunks.emplace_back(chunk_folder, static_cast<int>(i + 1), static_cast<int64_t>(sources[i].size()),
                          options.chunk_lines);
      if (!translate_chunks(engine, sources[i], chunks.back(), "corpus " + std::to_string(i + 1), stop_requested)) {
        log.check();
        return {"signal", 0, "", "", 0.0};
      }
    }

    // Stage 2: the least likely pairs dropped, unless done for this stage 1 and share.
    const auto stage2_path = folder / "stage2.json";
    nlohmann::json stage2 = {{"stage1", identity.hash()}, {"filter", options.filter}};
    bool done = false;
    if (std::filesystem::exists(stage2_path, error)) {
      auto before = parse_json(util::read_file(stage2_path), stage2_path.string());
      if (before.value("filter", -1.0) != options.filter && !lock.checkpoints().empty()) {
        throw InputError(fmt::format("run folder {} holds a student trained on the pairs --distill-filter {} kept: give "
                                     "that, or --no-resume --overwrite to distill again from scratch",
                                     run.string(), before.value("filter", -1.0)));
      }
      done = before.value("stage1", "") == stage2["stage1"] && before.value("filter", -1.0) == options.filter;
      for (size_t i = 0; done && i < corpora.size(); ++i) {
        done = std::filesystem::is_regular_file(folder / fmt::format("corpus{}.{}", i + 1, c.data.src_lang), error) &&
               std::filesystem::is_regular_file(folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang), error);
      }
    }
    if (done) {
      spdlog::info("distill stage 2: the filtered corpora are there from before");
    } else {
      stage2["kept"] = nlohmann::json::array();
      for (size_t i = 0; i < corpora.size(); ++i) {
        const auto [kept_lines, empty] =
            keep_likely(sources[i], chunks[i], options.filter, folder / fmt::format("corpus{}.{}", i + 1, c.data.src_lang),
                        folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang));
        spdlog::info("distill stage 2, corpus {}: kept {} of {} pairs, dropped the teacher's least likely {} "
                     "(--distill-filter {}){}",
                     i + 1, kept_lines, sources[i].size(),
                     static_cast<int64_t>(sources[i].size()) - kept_lines - empty, options.filter,
                     empty > 0 ? fmt::format(" and {} it left empty", empty) : "");
        stage2["kept"].push_back(kept_lines);
      }
      util::write_file_atomically(stage2_path, stage2.dump(2) + "\n", util::Special::kReplace);
    }
    log.check();
  }

  // Stage 3: the student, on the distilled corpora (and the original ones with --distill-mix
  // original), validated on the run's own dev set.
  std::vector<run_config::CorpusSpec> student;
  for (size_t i = 0; i < corpora.size(); ++i) {
    run_config::CorpusSpec distilled;
    distilled.src = (folder / fmt::format("corpus{}.{}", i + 1, c.data.src_lang)).string();
    distilled.tgt = (folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang)).string();
    distilled.weight = corpora[i].weight;
    student.push_back(distilled);
  }
  if (options.mix == "original") {
    for (auto corpus : corpora) {
      corpus.weight *= options.mix_weight;
      student.push_back(corpus);
    }
  }
  c.data.corpora = student;
  if (c.given) c.given->insert("corpus");
  // Defaults of distill's own, not given: a resume holds to the run's, as for any option left out.
  if (!run_config::was_given(c, "vocab-size") && !run_config::was_given(c, "vocab-from")) {
    c.vocab_from = options.teachers.front();
  }
  if (!run_config::was_given(c, "preset")) c.run.preset = "student-tiny";
  spdlog::info("distill stage 3: training the student ({} corpora{}, --preset {})", student.size(),
               options.mix == "original" ? ", the original ones mixed in" : "", c.run.preset);
  return train::Trainer(c, stop_requested).run();
}

}  // namespace trafo::distill
