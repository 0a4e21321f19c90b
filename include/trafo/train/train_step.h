// One update of the model, the same for `trafo train` and for `trafo bench`, which times it:
// zero the gradients; for each batch of the update, the label-smoothed loss (model/loss.h, under
// bf16 autocast when asked) and backward of loss / the update's target tokens; the gradients summed
// over the replicas; clip their norm; then, unless that norm is not finite (docs/design.md "NaN guard":
// the update is skipped), set the learning rate and take the optimizer step.
#pragma once

#include <cstdint>
#include <vector>

#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include "trafo/data/batcher.h"
#include "trafo/model/transformer.h"

namespace trafo::train {

class Replicas;

struct StepOptions {
  double label_smoothing = 0.1;
  double clip_norm = 1.0;  // 0: no clipping (the norm is still measured)
  bool bf16 = false;       // forward under bf16 autocast; master weights and loss stay fp32
  double src_word_dropout = 0.0;  // share of source pieces replaced by unk (0: off)
  double tgt_word_dropout = 0.0;  // share of the decoder's input pieces replaced by unk; labels stay
  std::vector<int> kept = {};     // pieces word dropout never replaces: the corpus tags
};

// Word dropout (Sennrich & Zhang 2019, Araabi & Monz 2020): `ids` [B,T] with each piece other than
// pad, bos, eos and those of `kept` replaced by unk with probability `p`, drawn from LibTorch's default
// CPU generator (which a checkpoint saves, so that a resumed run draws as an uninterrupted one).
// `ids` itself when p is 0.
at::Tensor drop_words(const at::Tensor& ids, double p, const std::vector<int>& kept = {});

struct StepResult {
  bool applied = false;          // false: a non-finite loss or gradient, the update was skipped
  double loss = 0.0;             // smoothed loss summed over this process's target tokens; 0 when skipped
  int64_t target_tokens = 0;     // of the whole update: its batches' global target tokens
  double grad_norm = 0.0;        // before clipping
  double lr = 0.0;               // the learning rate the update was given
  double communication_s = 0.0;  // summing gradients over replicas, not hidden behind backward
};

class TrainStep {
 public:
  // `replicas` may be null (a single process); model, optimizer and replicas must outlive the step.
  TrainStep(model::Transformer& model, torch::optim::Optimizer& optimizer, const c10::Device& device,
            const StepOptions& options, Replicas* replicas = nullptr);

  // One update over `batches` (on the CPU; moved to the device here) with learning rate `lr`.
  // A batch with no rows (this replica's share of a tiny global batch) adds no gradient.
  StepResult run(const std::vector<data::Batch>& batches, double lr);

  int64_t skipped_in_a_row() const { return skipped_in_a_row_; }  // updates skipped since the last applied one
  int64_t skipped_total() const { return skipped_total_; }

 private:
  model::Transformer& model_;
  torch::optim::Optimizer& optimizer_;
  c10::Device device_;
  StepOptions options_;
  Replicas* replicas_;
  int64_t skipped_in_a_row_ = 0;
  int64_t skipped_total_ = 0;
};

}  // namespace trafo::train
