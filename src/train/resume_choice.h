// Which run a `trafo train` continues, and with which options: a run folder that holds checkpoints
// is resumed with the options of its config.toml where the request leaves them out, from its newest
// checkpoint that loads whole; a new run from --init-from takes that checkpoint's model and
// vocabulary. The ResumePoint is a part of a train::Session. Internal to train/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/run_config/options.h"
#include "trafo/run_config/presets.h"
#include "trafo/train/run_folder.h"
#include "replicas.h"

namespace trafo::train {

// The checkpoint a run continues from, as rank 0 chose it; every rank loads it.
struct ResumePoint {
  std::filesystem::path path;                   // empty: a new run
  std::optional<checkpoint::Checkpoint> saved;  // released once model and optimizer hold it
  bool replaces_old_run = false;                // --no-resume --overwrite over a folder that holds a run
  std::optional<checkpoint::Checkpoint> initial;  // a new run's --init-from checkpoint, released as `saved`
};

// Whether `config` continues the run of its folder: the folder holds checkpoints, and --no-resume is
// not given (with it, the folder's run is replaced or the request refused).
bool continues_run(const run_config::TrainConfig& config);

// `config` settled before anything reads it: a resume takes the run's options it leaves out
// (run_config::take_run_options, from config.toml) and never reads the --init-from file, which only a new run
// needs (it may be gone); a new run from --init-from takes the checkpoint's model and vocabulary
// (run_config::take_initial_options). Throws InputError for a conflict or an --init-from that does not load.
run_config::TrainConfig settle_options(run_config::TrainConfig config);

// The preset `config` settles on (run_config/presets.h), applied to the options it leaves out.
struct PresetReport {
  std::string name;
  std::string why;
  std::vector<std::string> set;  // the keys it gave a value
  bool timed = false;            // run_config::PresetChoice::timed
};

// A new run's --preset auto is chosen from its training pairs (the line counts, checked once per version
// of the files), its target bytes and its budget; `speed` times the built-in defaults where a --max-time
// budget asks. A resume keeps the run's preset unless --preset is given (a run from before presets had
// the standard one), and a preset then sets only training knobs.
PresetReport settle_preset(run_config::TrainConfig& config, const run_config::DefaultsSpeed& speed = {});

// Refuses (InputError, naming each option with both values) a resume whose options defining the
// model, tokenizer or data differ from those of the run `config.run.run_dir` holds (its config.toml).
void check_resume_request(const run_config::TrainConfig& config);

// The checkpoint of `folder` with the most steps done (at equal steps the newer file) that loads whole,
// whose training state unpacks, and that belongs to the run `config` asks for; one that does not is passed over with a warning naming it and why.
// Empty when the folder holds none. A folder none of whose checkpoints can be resumed is an
// InputError naming the first one and its cause: starting over would write over them.
std::optional<checkpoint::Checkpoint> newest_complete_checkpoint(const RunFolder& folder, const run_config::TrainConfig& config,
                                                                 std::filesystem::path& found);

// Rank 0 decides which checkpoint (if any) the run of `folder` resumes from; its model must be the one
// `config` (settled) asks for. A new run with --init-from starts from that checkpoint instead (every rank
// loads it). Either way the model trains with the dropout rates settled for this session, not the checkpoint's.
ResumePoint choose_resume(const run_config::TrainConfig& config, const RunFolder& folder, Replicas& replicas);

}  // namespace trafo::train
