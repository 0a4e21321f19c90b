// `trafo distill`: sequence-level knowledge distillation (Kim & Rush 2016), the recipe behind the
// Bergamot students Firefox ships. Three stages in the run folder, each kept and skipped when its
// output exists and matches its inputs, so the same command run again resumes where it stopped:
//   1. the teacher (one checkpoint or an ensemble) translates every training source with beam
//      search, in chunks written whole (RUN/distill/chunks: a kill loses at most the chunk under way);
//   2. the worst share of the distilled pairs by the teacher's log-probability per piece is dropped;
//   3. the student (--preset student-tiny unless told) trains on what is left, validated on the
//      real dev set, with the teacher's tokenizer unless --vocab-size gives it its own.
// docs/guide-students.md is the walk through it.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "trafo/run_config/options.h"
#include "trafo/train/trainer.h"

namespace trafo::distill {

struct DistillOptions {
  std::vector<std::string> teachers;  // checkpoints: one, or an ensemble (averaged log-probabilities)
  int beam = 4;                       // the teacher's beam
  double filter = 0.05;               // share of distilled pairs dropped, the teacher's least likely
  std::string mix = "none";           // none | original: the original pairs as a second corpus
  double mix_weight = 1.0;            // the original corpora's weights are multiplied by it (the distilled
                                      // ones keep their corpus's weight)
  int64_t chunk_lines = 1000;         // source lines translated per chunk
  std::string device = "auto";        // the teacher's, as translate's --device
  std::string precision = "auto";     // the teacher's, as translate's --precision (auto resolved once a run)
  int64_t batch_tokens = 4096;        // source pieces per decoding batch
};

// Throws InputError naming the first invalid option.
void validate(const DistillOptions& options);

// The three stages for `config` (as `trafo train` takes it: the data, the student's model and
// training options, the run folder). Throws InputError for a teacher that does not load or
// translates another pair, an empty corpus, a run folder that holds another command's run, or a
// teacher, corpus or option changed since stage 1 (nothing already distilled is removed);
// RunError for a failure on the way. `stop_requested` ends stage 1 after its chunk and stage 3 as
// `trafo train` ends.
train::TrainResult distill(run_config::TrainConfig config, const DistillOptions& options,
                           const std::atomic<bool>* stop_requested = nullptr);

}  // namespace trafo::distill
