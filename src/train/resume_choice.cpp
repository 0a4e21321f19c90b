#include "resume_choice.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/run_config/config_file.h"
#include "trafo/run_config/presets.h"
#include "trafo/train/ema.h"
#include "trafo/train/optimizer.h"
#include "trafo/run_config/run_identity.h"
#include "trafo/train/training_state.h"
#include "trafo/util/files.h"
#include "generators_kept.h"
#include "training_data.h"

namespace trafo::train {
using run_config::TrainConfig;
using run_config::run_differences;
using run_config::take_run_options;
using run_config::take_initial_options;
using run_config::read_run_config;
using run_config::join_differences;
using run_config::was_given;
namespace {

// The run a folder holds, as its config.toml says; nullopt for a folder without one (a new run,
// or a run whose config.toml was removed: its checkpoints are then held to the request).
std::optional<TrainConfig> run_of_folder(const std::filesystem::path& folder) {
  const auto path = folder / "config.toml";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;
  try {
    return read_run_config(util::read_file(path), path.string());
  } catch (const InputError& e) {
    spdlog::warn("cannot read the run's options from {} ({}): its checkpoints are held to the options given",
                 path.string(), e.what());
    return std::nullopt;
  }
}

// Why `saved` belongs to another run than the one asked for: its model, its tokenizer or the options
// stored with it (languages, data, vocabulary) differ. Empty when it is this run's.
std::string foreign_reason(const checkpoint::Checkpoint& saved, const TrainConfig& c, const std::string& path) {
  model::ModelConfig asked = c.model;
  asked.vocab_size = saved.model_config.vocab_size;  // the tokenizer's size, compared below
  const auto model = model::describe_differences(saved.model_config, asked);
  if (!model.empty()) return "its model differs (checkpoint vs run: " + model + ")";
  const auto differences = run_differences(read_run_config(saved.config, path + "'s config"), c);
  if (!differences.empty()) return "it was trained with other options (checkpoint vs run: " +
                                   join_differences(differences) + ")";
  if (saved.model_config.vocab_size > c.vocab.vocab_size && c.vocab_from.empty()) {  // --vocab-from: its size
    return "its tokenizer has " + std::to_string(saved.model_config.vocab_size) + " pieces, more than the run's " +
           "--vocab-size " + std::to_string(c.vocab.vocab_size);
  }
  return "";
}

// Throws the InputError that resuming from `saved` would meet once the model and optimizer are made
// (its raw weights with --ema, its optimizer state, its progress): unpacked here into a CPU copy, so
// that such a checkpoint is passed over before anything is built from it.
void check_training_state(const checkpoint::Checkpoint& saved, const run_config::OptimOptions& optim) {
  torch::NoGradGuard no_grad;
  auto model = checkpoint::make_model(saved, torch::kCPU);
  const auto parameters = named_parameters(*model);
  for (const auto& [name, raw] : raw_weights(*saved.training)) {
    for (const auto& [parameter, value] : parameters) {
      if (parameter == name && raw.sizes() != value.sizes()) {
        throw InputError("its training state is unreadable: the raw weight " + name + " does not fit the model");
      }
    }
  }
  auto optimizer = make_optimizer(optim.optimizer, model->parameters(), optim.lr, optim.adam_beta1, optim.adam_beta2,
                                  optim.adam_eps, optim.weight_decay);
  const GeneratorsKept kept;
  unpack_training_state(*saved.training, *optimizer, parameters);
}

// The step a checkpoint's training state records; -1 when it holds none or the record is unreadable
// (the checks below then say why it cannot be resumed from).
int64_t recorded_step(const checkpoint::Checkpoint& saved) {
  if (!saved.training) return -1;
  const auto json = parse_json(saved.training->json, "the training state", /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("step") || !json["step"].is_number_integer()) return -1;
  return json["step"].get<int64_t>();
}

}  // namespace

bool continues_run(const TrainConfig& c) {
  return !c.run.no_resume && !RunFolder::checkpoints_in(c.run.run_dir).empty();
}

TrainConfig settle_options(TrainConfig c) {
  if (!c.init_from.empty() && !c.vocab_from.empty()) {
    throw InputError("--vocab-from " + c.vocab_from + " and --init-from " + c.init_from +
                     ": the checkpoint a run starts from brings its own tokenizer; give one of them");
  }
  if (continues_run(c)) {
    if (const auto run = run_of_folder(c.run.run_dir)) {
      take_run_options(c, *run);
      return c;
    }
    // Without config.toml, the run's model is known from its --init-from where that is still there.
    std::error_code error;
    if (c.init_from.empty() || !std::filesystem::is_regular_file(c.init_from, error)) return c;
  }
  if (!c.init_from.empty()) {
    const auto initial = checkpoint::load(c.init_from, /*with_training_state=*/false);
    take_initial_options(c, read_run_config(initial.config, c.init_from + "'s config"), initial.model_config);
  }
  return c;
}

PresetReport settle_preset(TrainConfig& c, const run_config::DefaultsSpeed& speed) {
  const bool resuming = continues_run(c);
  std::string why;
  if (resuming && !run_config::was_given(c, "preset")) {
    const auto run = run_of_folder(c.run.run_dir);
    c.run.preset = run && run->run.preset != "auto" ? run->run.preset : "standard";
    why = "the run's";
  }
  run_config::CorpusSize corpus;
  if (c.run.preset == "auto" && c.init_from.empty()) {
    // The training files' line counts only, kept in the cache folder: TrainingFiles checks them, and
    // reads the dev and test files, once the options are settled.
    const auto cache = cache_folder(c);
    for (const auto& files : run_config::data_files(c).train) {
      corpus.pairs += data::check_parallel_files_once(cache, files.src, files.tgt);
      std::error_code error;
      const auto bytes = std::filesystem::file_size(files.tgt, error);
      if (!error) corpus.target_bytes += static_cast<int64_t>(bytes);
    }
  }
  const auto choice = run_config::choose_preset(c, corpus, speed);
  auto set = run_config::apply_preset(c, choice, resuming);
  return PresetReport{choice.preset->name, why.empty() ? choice.why : why, std::move(set), choice.timed};
}

void check_resume_request(const TrainConfig& c) {
  if (!continues_run(c)) return;
  const auto run = run_of_folder(c.run.run_dir);
  if (!run) return;
  const auto differences = run_differences(*run, c);
  if (differences.empty()) return;
  throw InputError("cannot resume the run in " + c.run.run_dir + ": options that define its model, tokenizer or data " +
                   "differ (run vs now: " + join_differences(differences) +
                   "); give the run's values, another --run-dir, or --no-resume --overwrite to start over");
}

std::optional<checkpoint::Checkpoint> newest_complete_checkpoint(const RunFolder& folder, const TrainConfig& c,
                                                                 std::filesystem::path& found) {
  const auto candidates = folder.checkpoints();
  std::string first_error;
  const auto pass_over = [&](const std::filesystem::path& path, const std::string& why) {
    spdlog::warn("cannot resume from {}: {}", path.string(), why);
    if (first_error.empty()) first_error = path.string() + ": " + why;
  };
  // The furthest progress first: a run's steps only grow, while modification times do not survive a
  // copy of the folder. At equal steps, the newer file (checkpoint-last.pt at equal times).
  struct Loaded {
    checkpoint::Checkpoint saved;
    std::filesystem::path path;
    int64_t step;  // recorded_step, read once
  };
  std::vector<Loaded> loaded;
  for (const auto& path : candidates) {
    try {
      auto saved = checkpoint::load(path);
      const int64_t step = recorded_step(saved);
      loaded.push_back({std::move(saved), path, step});
    } catch (const InputError& e) {
      pass_over(path, e.what());
    }
  }
  std::stable_sort(loaded.begin(), loaded.end(), [](const Loaded& a, const Loaded& b) { return a.step > b.step; });
  for (auto& [saved, path, step] : loaded) {
    try {
      if (!saved.training) throw InputError("it holds no training state to resume from");
      const auto foreign = foreign_reason(saved, c, path.string());
      if (!foreign.empty()) throw InputError("it belongs to another run: " + foreign);
      check_training_state(saved, c.optim);
      // A training state whose step is unreadable sorts last and is never tried: it is named too.
      for (const auto& other : loaded) {
        if (other.path != path && other.step < 0 && other.saved.training) {
          pass_over(other.path, "its training state is damaged: it records no step");
        }
      }
      found = path;
      return std::move(saved);
    } catch (const InputError& e) {
      pass_over(path, e.what());
    }
  }
  if (candidates.empty()) return std::nullopt;
  throw InputError("run folder " + folder.path().string() + " holds checkpoints but none can be resumed (" +
                   first_error + "); use --no-resume --overwrite to start over, or another --run-dir");
}

ResumePoint choose_resume(const TrainConfig& c, const RunFolder& folder, Replicas& replicas) {
  ResumePoint resume;
  if (replicas.is_main()) {
    const bool has_run = !folder.checkpoints().empty();
    if (has_run && c.run.no_resume && !c.run.overwrite) {
      throw InputError("run folder " + folder.path().string() +
                       " already holds a run: drop --no-resume to continue it, or add --overwrite to start over");
    }
    resume.replaces_old_run = has_run && c.run.no_resume;
    if (!c.run.no_resume) {
      check_resume_request(c);
      resume.saved = newest_complete_checkpoint(folder, c, resume.path);
    }
  }
  resume.path = replicas.share("resume", resume.path.string());
  if (resume.path.empty() && !c.init_from.empty()) {
    resume.initial = checkpoint::load(c.init_from, /*with_training_state=*/false);
    model::take_dropout_rates(resume.initial->model_config, c.model);
    return resume;
  }
  if (resume.path.empty()) return resume;
  if (!c.init_from.empty() && was_given(c, "init-from")) {
    spdlog::info("{} holds a run started from {}: resuming it (--init-from starts new runs only)",
                 folder.path().string(), c.init_from);
  }
  if (!resume.saved) resume.saved = checkpoint::load(resume.path);
  model::take_dropout_rates(resume.saved->model_config, c.model);
  return resume;  // the checkpoint's tokenizer is kept: its size is the model's vocabulary (TrainingData)
}

}  // namespace trafo::train
