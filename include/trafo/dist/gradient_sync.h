// Sums gradients over a Group in buckets: parameters are grouped (in reverse order, as backward
// reaches them) into flat buffers of about `bucket_bytes`; during the last backward of an
// update, autograd hooks copy each finished gradient into its bucket and a full bucket starts
// its all-reduce at once, overlapping the rest of backward. Buckets start in the same order on
// every rank, as collectives must.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

namespace trafo::dist {

class Group;

class GradientSync {
 public:
  static constexpr int64_t kDefaultBucketBytes = 25 << 20;  // as torch DDP

  GradientSync(Group& group, std::vector<at::Tensor> parameters, int64_t bucket_bytes = kDefaultBucketBytes);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Call before the last backward of an update (with gradient accumulation, the earlier ones
  // only accumulate locally). A rank with no data for this update may skip backward.
  void arm();
  // Starts what is left, waits, and writes the sums into the parameters' .grad.
  // Returns the seconds spent waiting here (communication not hidden behind backward).
  double finish();

  // Seconds one all-reduce of every bucket takes once all ranks are ready (a barrier first):
  // the communication cost of an update, apart from waiting for a slower rank.
  double time_all_reduce();

  int64_t buckets() const;
  int64_t bytes() const;  // gradient volume all-reduced per update

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trafo::dist
