// One update of the model, the same for `trafo train` and for `trafo bench`, which times it:
// zero the gradients; for each batch of the update, the label-smoothed loss (model/loss.h, under
// bf16 autocast when asked) and backward of loss / the update's target tokens; the gradients summed
// over the replicas; their norm; clip; then the optimizer step with the learning rate given, which the
// device skips when that norm is not finite (docs/design.md "NaN guard").
//
// Nothing in an update waits for the host (docs/design.md "A step that never waits"): the norm, the
// finite check and the skip decision stay on the device, and the update's figures (applied, loss,
// norm) come back by an asynchronous copy that the caller reads when it needs them, so that the next
// update can be queued before the last one has finished.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include "trafo/data/batcher.h"
#include "trafo/model/transformer.h"

namespace c10 {
struct Event;
}

namespace trafo::train {

class Replicas;

struct StepOptions {
  double label_smoothing = 0.1;
  double clip_norm = 1.0;  // 0: no clipping (the norm is still measured)
  bool bf16 = false;       // forward under bf16 autocast; master weights and loss stay fp32
  double src_word_dropout = 0.0;  // share of source pieces replaced by unk (0: off)
  double tgt_word_dropout = 0.0;  // share of the decoder's input pieces replaced by unk; labels stay
  std::vector<int> kept = {};     // pieces word dropout never replaces: the corpus tags
  // On CUDA, one batch per update and one process: replay each shape bucket's step as a CUDA graph
  // (train/step_graphs.h). The caller leaves it off where a step decides on the host (LayerDrop).
  bool cuda_graphs = false;
  // Pad every batch to its shape bucket (train/shape_buckets.h), as CUDA graphs do; on by itself
  // only in tests, which check that padding changes nothing.
  bool pad_to_buckets = false;
  // Guided alignment: the weight of model::guided_alignment_loss of the model's guided head
  // (ModelConfig::alignment_layer) against batches' Batch::alignment, added to the loss that
  // backward takes (not to the loss reported). 0: off.
  double guided_alignment_weight = 0.0;
};

// Word dropout (Sennrich & Zhang 2019, Araabi & Monz 2020): `ids` [B,T] with each piece other than
// pad, bos, eos and those of `kept` replaced by unk with probability `p`, drawn from LibTorch's default
// CPU generator (which a checkpoint saves, so that a resumed run draws as an uninterrupted one).
// `ids` itself when p is 0.
at::Tensor drop_words(const at::Tensor& ids, double p, const std::vector<int>& kept = {});

// `values` (a 1-d float tensor, on any device) on their way back to the host: the copy is queued
// behind the work that computes them, and read() waits for it the first time only.
class DeviceValues {
 public:
  DeviceValues() = default;
  explicit DeviceValues(const at::Tensor& values);
  bool ready() const;                        // read() would not wait
  const std::vector<double>& read() const;  // the values; empty when default-made

 private:
  at::Tensor host_;                      // the copy's destination (pinned on CUDA)
  std::shared_ptr<c10::Event> copied_;   // recorded after the copy; none on the CPU
  mutable std::vector<double> values_;
  mutable bool read_ = false;
};

struct StepResult {
  int64_t target_tokens = 0;     // of the whole update: its batches' global target tokens
  double lr = 0.0;               // the learning rate the update was given
  double communication_s = 0.0;  // summing gradients over replicas, not hidden behind backward
  DeviceValues figures;          // applied (1 or 0), smoothed loss, gradient norm

  // Each waits for the update to finish on the device (the first read only).
  bool applied() const { return figures.read()[0] != 0.0; }  // false: a non-finite loss or gradient, skipped
  double loss() const { return figures.read()[1]; }  // smoothed loss summed over this process's target tokens; 0 when skipped
  double grad_norm() const { return figures.read()[2]; }  // before clipping
};

class StepGraphs;
struct StepInputs;

class TrainStep {
 public:
  // `replicas` may be null (a single process); model, optimizer and replicas must outlive the step.
  // The optimizer is make_optimizer's (train/optimizer.h), whose step the device can skip.
  TrainStep(model::Transformer& model, torch::optim::Optimizer& optimizer, const c10::Device& device,
            const StepOptions& options, Replicas* replicas = nullptr);

  // Queues one update over `batches` (on the CPU; copied to the device here, from pinned memory on
  // CUDA) with learning rate `lr`, and returns without waiting for it. A batch with no rows (this
  // replica's share of a tiny global batch) adds no gradient.
  StepResult run(const std::vector<data::Batch>& batches, double lr);

  ~TrainStep();

  // The CUDA graphs, when cuda_graphs is on and the device is CUDA; else null.
  const StepGraphs* graphs() const { return graphs_.get(); }

 private:
  at::Tensor to_device(const at::Tensor& ids) const;
  at::Tensor device_alignment(const data::Batch& batch) const;  // undefined without guided alignment
  // Forward and backward of one batch on the device; the smoothed loss sum (detached).
  at::Tensor forward_backward(const at::Tensor& source, const at::Tensor& target_input,
                              const at::Tensor& target_output, const at::Tensor& scale,
                              const at::Tensor& alignment = {});
  // After the gradients: norm, the skip decision, clipping and the optimizer step (with `lr` from
  // the device when given); the figures [3] of the update.
  at::Tensor finish(const at::Tensor& loss_sum, const at::Tensor& lr);
  // The whole update of one batch, for the CUDA graphs.
  at::Tensor whole_update(const StepInputs& inputs);

  model::Transformer& model_;
  torch::optim::Optimizer& optimizer_;
  c10::Device device_;
  StepOptions options_;
  Replicas* replicas_;
  std::vector<at::Tensor> parameters_;
  std::unique_ptr<StepGraphs> graphs_;
};

}  // namespace trafo::train
