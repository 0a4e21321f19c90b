#include "trafo/run_config/run_identity.h"

#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "trafo/errors.h"
#include "trafo/run_config/config_file.h"
#include "trafo/run_config/config_keys.h"

namespace trafo::run_config {
namespace {

bool in_group(const ConfigKey& key, std::initializer_list<const char*> groups) {
  for (const char* group : groups) {
    if (std::strcmp(key.group, group) == 0) return true;
  }
  return false;
}

// The dropout rates: training knobs in the Model group, which a resume or a fine-tuning may change.
bool is_dropout_option(const std::string& name) {
  return name == "dropout" || name == "attention-dropout" || name == "activation-dropout" ||
         name == "encoder-layerdrop" || name == "decoder-layerdrop";
}

bool defines_run(const ConfigKey& key) {
  return in_group(key, {"Data", "Vocabulary", "Model"}) && !is_dropout_option(key.name);
}

bool is_data_file_key(const std::string& name) {
  return name == "data-dir" || name == "train-src" || name == "train-tgt" || name == "dev-src" || name == "dev-tgt";
}

// Options of the Data group that do not change what the run trains on.
bool leaves_data_alone(const std::string& name) {
  return name == "test-src" || name == "test-tgt" || name == "cache-dir" || name == "init-from";
}

// The same file by any name: equal text, or one path once made absolute and resolved. An empty path
// (no file: a run not started from --init-from) is the same as no other.
bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (a.empty() || b.empty()) return false;
  auto resolved = [](const std::string& path, std::error_code& error) {
    const auto absolute = std::filesystem::absolute(path, error);
    return error ? absolute : std::filesystem::weakly_canonical(absolute, error);
  };
  std::error_code error_a, error_b;
  const auto resolved_a = resolved(a, error_a), resolved_b = resolved(b, error_b);
  return !error_a && !error_b && resolved_a == resolved_b;
}

// Sets the value of `key` in `to` to its value in `from`.
void copy_value(const ConfigKey& key, const TrainConfig& from, TrainConfig& to) {
  std::visit([&](auto* target) { *target = *std::get<std::remove_reference_t<decltype(target)>>(
                                     key.field(const_cast<TrainConfig&>(from))); },
             key.field(to));
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

}  // namespace

DataFiles data_files(const TrainConfig& c) {
  auto in_dir = [&](const std::string& split, const std::string& lang) {
    return (std::filesystem::path(c.data.data_dir) / (split + "." + lang)).string();
  };
  DataFiles files;
  files.train = c.data.corpora;
  if (files.train.empty()) {
    CorpusSpec only;
    only.src = !c.data.train_src.empty() ? c.data.train_src : in_dir("train", c.data.src_lang);
    only.tgt = !c.data.train_tgt.empty() ? c.data.train_tgt : in_dir("train", c.data.tgt_lang);
    only.alignment = c.data.guided_alignment;
    files.train.push_back(only);
  }
  files.dev_src = !c.data.dev_src.empty() ? c.data.dev_src : in_dir("dev", c.data.src_lang);
  files.dev_tgt = !c.data.dev_tgt.empty() ? c.data.dev_tgt : in_dir("dev", c.data.tgt_lang);
  files.test_src = c.data.test_src;
  files.test_tgt = c.data.test_tgt;
  if (files.test_src.empty() && files.test_tgt.empty() && !c.data.data_dir.empty()) {
    std::error_code error;
    const auto src = in_dir("test", c.data.src_lang), tgt = in_dir("test", c.data.tgt_lang);
    if (std::filesystem::is_regular_file(src, error) && std::filesystem::is_regular_file(tgt, error)) {
      files.test_src = src;
      files.test_tgt = tgt;
    }
  }
  return files;
}

bool defines_run(const std::string& name) {
  const ConfigKey* key = find_config_key(name);
  return key != nullptr && defines_run(*key);
}

std::vector<std::string> run_differences(const TrainConfig& a, const TrainConfig& b) {
  std::vector<std::string> out;
  for (const auto& key : config_keys()) {
    // guided-alignment is the single corpus's alignment, compared as a file with the corpora below
    // vocab-from is read at a run's start only; after that the run's checkpoints hold the tokenizer
    if (!defines_run(key) || is_data_file_key(key.name) || leaves_data_alone(key.name) ||
        std::string(key.name) == "guided-alignment" || std::string(key.name) == "vocab-from") {
      continue;
    }
    const auto value_a = format_value(key, a), value_b = format_value(key, b);
    if (value_a != value_b) out.push_back(std::string(key.name) + " " + value_a + " vs " + value_b);
  }
  const auto files_a = data_files(a), files_b = data_files(b);
  const bool several = files_a.train.size() > 1 || files_b.train.size() > 1 || !a.data.corpora.empty() ||
                       !b.data.corpora.empty();
  if (files_a.train.size() != files_b.train.size()) {
    out.push_back("corpora " + std::to_string(files_a.train.size()) + " vs " + std::to_string(files_b.train.size()));
  } else {
    for (size_t i = 0; i < files_a.train.size(); ++i) {
      const auto &x = files_a.train[i], &y = files_b.train[i];
      const std::string name = several ? "corpus " + std::to_string(i + 1) + " " : "train-";
      if (!same_file(x.src, y.src)) out.push_back(name + "src " + quoted(x.src) + " vs " + quoted(y.src));
      if (!same_file(x.tgt, y.tgt)) out.push_back(name + "tgt " + quoted(x.tgt) + " vs " + quoted(y.tgt));
      if (x.weight != y.weight) out.push_back(name + fmt::format("weight {} vs {}", x.weight, y.weight));
      if (x.tag != y.tag) out.push_back(name + "tag " + quoted(x.tag) + " vs " + quoted(y.tag));
      const auto languages = [](const CorpusSpec& corpus, const TrainConfig& run) {
        return source_language(corpus, run.data) + "-" + target_language(corpus, run.data);
      };
      if (languages(x, a) != languages(y, b)) {
        out.push_back(name + "languages " + quoted(languages(x, a)) + " vs " + quoted(languages(y, b)));
      }
      if (!same_file(x.alignment, y.alignment)) {
        out.push_back((several ? name + "alignment " : std::string("guided-alignment ")) + quoted(x.alignment) + " vs " +
                      quoted(y.alignment));
      }
    }
  }
  if (!(a.init_from.empty() && b.init_from.empty()) && !same_file(a.init_from, b.init_from)) {
    out.push_back("init-from " + quoted(a.init_from) + " vs " + quoted(b.init_from));
  }
  const std::pair<const char*, std::string DataFiles::*> file_keys[] = {{"dev-src", &DataFiles::dev_src},
                                                                         {"dev-tgt", &DataFiles::dev_tgt}};
  for (const auto& [name, member] : file_keys) {
    if (!same_file(files_a.*member, files_b.*member)) {
      out.push_back(std::string(name) + " " + quoted(files_a.*member) + " vs " + quoted(files_b.*member));
    }
  }
  return out;
}

void take_run_options(TrainConfig& c, const TrainConfig& run) {
  // The data files and corpora name the data together: one given replaces them all.
  bool data_given = was_given(c, "corpus");
  for (const auto& key : config_keys()) data_given |= is_data_file_key(key.name) && was_given(c, key.name);
  for (const auto& key : config_keys()) {
    const std::string name = key.name;
    if (!in_group(key, {"Data", "Vocabulary", "Model"}) || name == "test-src" || name == "test-tgt" ||
        name == "cache-dir") {
      continue;  // not the run's: these may change at any resume
    }
    if (is_data_file_key(name) ? data_given : was_given(c, name)) continue;
    copy_value(key, run, c);
  }
  if (!data_given) c.data.corpora = run.data.corpora;
}

void take_initial_options(TrainConfig& c, const TrainConfig& theirs, const model::ModelConfig& model) {
  std::vector<std::string> conflicts;
  for (const auto& key : config_keys()) {
    const std::string name = key.name;
    if (!in_group(key, {"Model", "Vocabulary"}) || is_dropout_option(name) || name == "init-from" ||
        name == "vocab-from") {
      continue;  // the checkpoint's tokenizer is the run's, whatever it was made from
    }
    const auto asked = format_value(key, c), kept = format_value(key, theirs);
    if (asked != kept && was_given(c, name)) conflicts.push_back(name + " " + asked + " vs " + kept);
    copy_value(key, theirs, c);
  }
  if (!conflicts.empty()) {
    throw InputError("--init-from " + c.init_from + " fixes the model and tokenizer, and options given differ (asked vs " +
                     "checkpoint: " + join_differences(conflicts) + "); leave them out or give the checkpoint's values");
  }
  const model::ModelConfig asked = c.model;  // the dropout rates: each the one given, else the checkpoint's
  c.model = model;
  if (was_given(c, "dropout")) c.model.dropout = asked.dropout;
  if (was_given(c, "attention-dropout")) c.model.attention_dropout = asked.attention_dropout;
  if (was_given(c, "activation-dropout")) c.model.activation_dropout = asked.activation_dropout;
  if (was_given(c, "encoder-layerdrop")) c.model.encoder_layerdrop = asked.encoder_layerdrop;
  if (was_given(c, "decoder-layerdrop")) c.model.decoder_layerdrop = asked.decoder_layerdrop;
}

TrainConfig read_run_config(const std::string& text, const std::string& where) {
  TrainConfig config;
  read_config_text(text, where, config);
  return config;
}

std::string join_differences(const std::vector<std::string>& differences) {
  std::string out;
  for (size_t i = 0; i < differences.size(); ++i) {
    if (i > 0) out += i + 1 == differences.size() ? " and " : ", ";
    out += differences[i];
  }
  return out;
}

}  // namespace trafo::run_config
