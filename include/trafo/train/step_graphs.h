// The training step on CUDA as CUDA graphs: one graph per batch-shape bucket
// (train/shape_buckets.h), captured the second time the bucket comes and replayed from then on, so
// that a step costs the host a few copies and one launch instead of thousands of kernel launches.
// A bucket's first batch runs eagerly (the warm-up a capture needs); a bucket past the cap, or
// every bucket once a capture has failed, goes on eagerly. Every step, eager or replayed, runs on a
// stream of its own that waits for the caller's and that the caller's waits for in turn.
//
// The graphs share one memory pool: nothing a replay writes is read after the next replay, except
// each graph's figures, which the caller copies out (DeviceValues) before it. Random numbers stay
// right under replay: LibTorch's CUDA generator hands each replay fresh offsets.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "trafo/data/batcher.h"
#include "trafo/train/train_step.h"

namespace trafo::train {

// What a step reads, on the device: the same tensors at every replay of a graph.
struct StepInputs {
  at::Tensor source, target_input, target_output;  // [B,S], [B,T], [B,T] int64
  at::Tensor tokens;  // [] float: the update's target tokens
  at::Tensor lr;      // [] float: its learning rate
};

class StepGraphs {
 public:
  // The step: figures [3] (applied, loss, norm) of one update over `inputs`.
  using Step = std::function<at::Tensor(const StepInputs&)>;

  // `max_graphs`: captures at most this many buckets.
  StepGraphs(const c10::Device& device, int64_t max_graphs = 128);
  ~StepGraphs();

  // Whether this build of trafo can capture CUDA graphs (LibTorch with CUDA).
  static bool built();

  // One update over `batch` (on the CPU, already padded to its bucket): eagerly or by replay.
  DeviceValues run(const data::Batch& batch, double tokens, double lr, const Step& step);

  int64_t captured() const;  // graphs captured so far
  int64_t replays() const;   // steps run by replay
  const std::string& failure() const;  // why captures stopped ("" while they work)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trafo::train
