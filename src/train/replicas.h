// The data-parallel side of a training run. Without WORLD_SIZE it is a single replica and every
// call is trivial; with it, the replicas form a c10d group: rank 0 logs, validates and saves,
// all ranks hold the same weights and optimizer state and sum their gradients each update.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trafo/dist/environment.h"

namespace trafo::dist {
class Group;
class GradientSync;
}  // namespace trafo::dist

namespace trafo::train {

class Replicas {
 public:
  Replicas(const dist::Environment& environment, const c10::Device& device, std::chrono::milliseconds timeout);
  ~Replicas();

  bool is_main() const { return rank_ == 0; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string describe() const;  // "1 process" or "rank 0 of 2 (gloo)"

  // Rank 0's value of `value` on every rank (data only rank 0 computes, e.g. the tokenizer).
  std::string share(const std::string& key, const std::string& value);
  // The ranks agree on the stop flags: a flag is set when any rank set it.
  std::vector<bool> any(const std::vector<bool>& flags);
  double sum(double value);

  // Copies rank 0's parameters to every rank and starts summing their gradients in buckets.
  void replicate(const std::vector<at::Tensor>& parameters);
  // Seconds of one all-reduce of all gradients, and their bytes (0 for a single process).
  double time_gradient_all_reduce();
  int64_t gradient_bytes() const;
  void before_last_backward();
  double sum_gradients();  // seconds of communication not hidden behind backward

 private:
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<dist::Group> group_;
  std::unique_ptr<dist::GradientSync> sync_;
};

}  // namespace trafo::train
