#include "trafo/distill/distill.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>

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

// The temporaries (NAME.tmp-PID) a killed run left in `folder`: the run folder's lock is held, so no
// live process is writing one.
void remove_stale_temporaries(const std::filesystem::path& folder) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) util::remove_tree(entry.path());
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

namespace {

// The student's run: the distilled corpora (and the original ones with --distill-mix original),
// validated on the run's own dev set, with the teacher's tokenizer and student-tiny unless given.
run_config::TrainConfig student_config(run_config::TrainConfig c, const DistillOptions& options,
                                       const std::vector<run_config::CorpusSpec>& corpora,
                                       const std::filesystem::path& folder) {
  std::vector<run_config::CorpusSpec> student;
  for (size_t i = 0; i < corpora.size(); ++i) {
    auto distilled = corpora[i];  // its weight and tag
    distilled.src = (folder / fmt::format("corpus{}.{}", i + 1, c.data.src_lang)).string();
    distilled.tgt = (folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang)).string();
    distilled.alignment.clear();
    student.push_back(distilled);
  }
  if (options.mix == "original") {
    for (auto corpus : corpora) {
      corpus.weight *= options.mix_weight;
      student.push_back(corpus);
    }
  }
  c.data.corpora = student;
  c.data.train_src.clear();
  c.data.train_tgt.clear();
  if (c.given) c.given->insert("corpus");
  // Defaults of distill's own, not given: a resume holds to the run's, as for any option left out.
  if (!run_config::was_given(c, "vocab-size") && !run_config::was_given(c, "vocab-from") && c.init_from.empty()) {
    c.vocab_from = options.teachers.front();
  }
  if (!run_config::was_given(c, "preset")) c.run.preset = "student-tiny";
  run_config::validate(c);
  return c;
}

// A stage's record in RUN/distill, or nullopt where there is none; a damaged one is an InputError.
std::optional<nlohmann::json> read_record(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  auto json = parse_json(util::read_file(path), path.string());
  if (!json.is_object()) throw InputError(path.string() + " is damaged: not a JSON object; remove it to redo its stage");
  return json;
}

// Stages 1 and 2: RUN/distill/corpusC.{src,tgt} for each training corpus. The teacher and the corpus
// lines live only here. False where a signal stopped it.
bool distil_corpora(const run_config::TrainConfig& c, const DistillOptions& options,
                    const std::vector<run_config::CorpusSpec>& corpora, const std::atomic<bool>* stop_requested) {
  const std::filesystem::path run = c.run.run_dir, folder = run / "distill", chunk_folder = folder / "chunks";
  const auto identity_path = folder / "stage1.json", stage2_path = folder / "stage2.json";
  const bool start_over = c.run.no_resume && c.run.overwrite;
  std::vector<std::vector<std::string>> sources;
  for (const auto& corpus : corpora) {
    sources.push_back(util::read_lines(corpus.src));
    if (std::none_of(sources.back().begin(), sources.back().end(), has_text)) {
      throw InputError("corpus " + corpus.src + " is empty: nothing to distill");
    }
  }
  // Stage 1's identity: the teacher, the sources, the languages, the search; a precision left to
  // auto is the one the first run chose (timed, it might choose otherwise the next time). The
  // teacher is loaded, and so checked, before anything is written.
  std::optional<nlohmann::json> kept;
  try {
    kept = read_record(identity_path);
    // A teacher gone once stages 1 and 2 are done (its run moved on, its file was removed): the
    // student goes on from what it made.
    std::error_code error;
    const bool teachers_here = std::all_of(options.teachers.begin(), options.teachers.end(),
                                           [&](const std::string& path) { return std::filesystem::exists(path, error); });
    if (!teachers_here && kept && !start_over) {
      const auto done = read_record(stage2_path);
      bool outputs = done && done->value("filter", -1.0) == options.filter &&
                     done->value("stage1", "") == Identity{same_content(*kept)}.hash();
      for (size_t i = 0; outputs && i < corpora.size(); ++i) {
        outputs = std::filesystem::is_regular_file(folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang), error);
      }
      if (outputs) {
        spdlog::info("distill: the teacher ({}) is gone, and stages 1 and 2 are done: the student goes on",
                     fmt::join(options.teachers, ", "));
        return stop_requested == nullptr || !stop_requested->load();
      }
    }
    std::string precision = options.precision;
    if (precision == "auto" && kept && kept->contains("precision")) precision = kept->at("precision").get<std::string>();
    spdlog::info("distill: loading the teacher{} ({})", options.teachers.size() > 1 ? "s, an ensemble" : "",
                 fmt::join(options.teachers, ", "));
    auto loaded = std::make_shared<const inference::LoadedModel>(load_teacher(c, options, precision));

    train::RunFolder lock(run, /*lock=*/true);
    std::filesystem::create_directories(chunk_folder, error);
    if (error) throw_write_error(chunk_folder.string(), error.value());
    train::LogFileCopy log(run / "train.log");
    remove_stale_temporaries(folder);
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
    identity.json["languages"] = {c.data.src_lang, c.data.tgt_lang, loaded->tag};
    inference::SearchOptions search;
    search.beam = options.beam;
    search.batch_tokens = options.batch_tokens;
    identity.json["beam"] = search.beam;
    identity.json["length_penalty"] = search.length_penalty;
    identity.json["max_length"] = {search.max_length_a, search.max_length_b};
    identity.json["chunk_lines"] = options.chunk_lines;
    identity.json["precision"] = loaded->bf16 ? "bf16" : "fp32";
    if (kept && same_content(*kept) != same_content(identity.json)) {
      if (!start_over) {
        throw InputError("run folder " + run.string() + " was distilled with another teacher, corpus or search (" +
                         differences(*kept, identity.json) +
                         "): rerun as before, add --no-resume --overwrite to distill again, or use another --run-dir");
      }
      spdlog::info("distill: --no-resume --overwrite and another teacher, corpus or search ({}): translating again",
                   differences(*kept, identity.json));
      util::remove_tree(chunk_folder);
      std::filesystem::create_directories(chunk_folder, error);
      kept.reset();
    }
    if (!kept) util::write_file_atomically(identity_path, identity.json.dump(2) + "\n", util::Special::kReplace);

    // Stage 1: the teacher's translations, chunk by chunk (kept over --no-resume --overwrite while
    // they are of the same teacher, corpus and search: they would come out the same).
    const inference::Translation engine(loaded, search);
    std::vector<Chunks> chunks;
    for (size_t i = 0; i < corpora.size(); ++i) {
      chunks.emplace_back(chunk_folder, static_cast<int>(i + 1), static_cast<int64_t>(sources[i].size()),
                          options.chunk_lines);
      if (!translate_chunks(engine, sources[i], chunks.back(), "corpus " + std::to_string(i + 1), stop_requested)) {
        log.check();
        return false;
      }
    }

    // Stage 2: the least likely pairs dropped, unless done for this stage 1 and share. Its record
    // goes first and comes back last, so corpora half rewritten are never taken as done.
    const nlohmann::json stage2 = {{"stage1", Identity{same_content(identity.json)}.hash()}, {"filter", options.filter}};
    const auto before = read_record(stage2_path);
    if (before && before->value("filter", -1.0) != options.filter && !lock.checkpoints().empty() && !start_over) {
      throw InputError(fmt::format("run folder {} holds a student trained on the pairs --distill-filter {} kept: give "
                                   "that, or --no-resume --overwrite to train the student again",
                                   run.string(), before->value("filter", -1.0)));
    }
    bool done = before && before->value("stage1", "") == stage2["stage1"] && before->value("filter", -1.0) == options.filter;
    for (size_t i = 0; done && i < corpora.size(); ++i) {
      done = std::filesystem::is_regular_file(folder / fmt::format("corpus{}.{}", i + 1, c.data.src_lang), error) &&
             std::filesystem::is_regular_file(folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang), error);
    }
    if (done) {
      spdlog::info("distill stage 2: the filtered corpora are there from before");
    } else {
      util::remove_tree(stage2_path);
      for (size_t i = 0; i < corpora.size(); ++i) {
        const auto [kept_lines, empty] =
            keep_likely(sources[i], chunks[i], options.filter, folder / fmt::format("corpus{}.{}", i + 1, c.data.src_lang),
                        folder / fmt::format("corpus{}.{}", i + 1, c.data.tgt_lang));
        spdlog::info("distill stage 2, corpus {}: kept {} of {} pairs, dropped the teacher's least likely {} "
                     "(--distill-filter {}){}",
                     i + 1, kept_lines, sources[i].size(),
                     static_cast<int64_t>(sources[i].size()) - kept_lines - empty, options.filter,
                     empty > 0 ? fmt::format(" and {} without text on a side", empty) : "");
      }
      util::write_file_atomically(stage2_path, stage2.dump(2) + "\n", util::Special::kReplace);
    }
    log.check();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(folder.string() + " holds a damaged record (" + e.what() + "): remove it to redo its stage");
  }
  return stop_requested == nullptr || !stop_requested->load();
}

// Greedy sentences per second of `loaded` on `lines`, fp32, after one untimed batch.
double sentences_per_s(const std::shared_ptr<const inference::LoadedModel>& loaded,
                       const std::vector<std::string>& lines) {
  const inference::Translation engine(loaded, inference::SearchOptions{});
  engine.translate_best({lines.front()});
  const auto start = std::chrono::steady_clock::now();
  engine.translate_best(lines);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(lines.size()) / std::max(seconds, 1e-9);
}

// What the student buys: its greedy speed on the first dev sentences and its weights against the
// teacher's, in train.log. A teacher gone, or anything else that fails here, only skips the line.
void compare_speed(const run_config::TrainConfig& c, const DistillOptions& options, const train::TrainResult& result) {
  constexpr int64_t kLines = 200;
  try {
    const auto student_path = result.best_checkpoint.empty() ? result.last_checkpoint : result.best_checkpoint;
    auto lines = util::read_lines(run_config::data_files(c).dev_src, kLines);
    lines.erase(std::remove_if(lines.begin(), lines.end(), [](const std::string& l) { return !has_text(l); }),
                lines.end());
    if (lines.empty() || student_path.empty()) return;
    train::LogFileCopy log(std::filesystem::path(c.run.run_dir) / "train.log");
    const auto teacher = std::make_shared<const inference::LoadedModel>(load_teacher(c, options, "fp32"));
    const double teacher_speed = sentences_per_s(teacher, lines);
    int64_t teacher_weights = 0;
    for (const auto& model : teacher->models()) teacher_weights += model->parameter_count();
    inference::RuntimeOptions runtime;
    runtime.checkpoint = student_path;
    runtime.device = options.device;
    runtime.threads = c.machine.threads;
    runtime.precision = "fp32";
    const auto student = std::make_shared<const inference::LoadedModel>(inference::load_for_translation(runtime));
    const double student_speed = sentences_per_s(student, lines);
    spdlog::info("distill: the student translates {:.1f} dev sentences/s (greedy, fp32, {} sentences) against its "
                 "teacher's {:.1f} ({:.2f}x), with {} weights against {} ({:.2f}x)",
                 student_speed, lines.size(), teacher_speed, student_speed / teacher_speed,
                 student->model->parameter_count(), teacher_weights,
                 static_cast<double>(student->model->parameter_count()) / static_cast<double>(teacher_weights));
    log.check();
  } catch (const std::exception& e) {
    spdlog::warn("distill: the student's speed against its teacher's was not measured: {}", e.what());
  }
}

}  // namespace

train::TrainResult distill(run_config::TrainConfig c, const DistillOptions& options,
                           const std::atomic<bool>* stop_requested) {
  validate(options);
  run_config::validate(c);
  if (c.parallel.nproc > 1) {
    throw InputError("trafo distill runs one process: leave out --nproc (a student may go on with trafo train --nproc)");
  }
  if (!c.data.guided_alignment.empty()) {
    throw InputError("--guided-alignment: the teacher's translations have no alignments to guide the student by");
  }
  const std::filesystem::path run = c.run.run_dir, folder = run / "distill";
  std::error_code error;
  const bool student = !train::RunFolder::checkpoints_in(run).empty() || std::filesystem::exists(run / "config.toml", error);
  if (student && !std::filesystem::exists(folder / "stage1.json", error) && !(c.run.no_resume && c.run.overwrite)) {
    throw InputError("run folder " + run.string() +
                     " holds a run of trafo train, not of trafo distill: use another --run-dir");
  }
  if (student && c.run.no_resume && !c.run.overwrite) {
    throw InputError("run folder " + run.string() + " holds a student: drop --no-resume to go on with it, or add "
                     "--overwrite to train it again (the teacher's translations are kept while they still match)");
  }
  const auto corpora = corpora_of(c);
  const auto student_run = student_config(c, options, corpora, folder);  // checked before any stage
  if (!distil_corpora(c, options, corpora, stop_requested)) return {"signal", 0, "", "", 0.0};
  spdlog::info("distill stage 3: training the student ({} corpora{}{})", student_run.data.corpora.size(),
               options.mix == "original" ? ", the original ones mixed in" : "",
               run_config::was_given(c, "preset") || !student ? ", --preset " + student_run.run.preset : "");
  const auto result = train::Trainer(student_run, stop_requested).run();
  if (result.reason != "signal") compare_speed(c, options, result);
  return result;
}

}  // namespace trafo::distill
