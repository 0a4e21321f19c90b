// A data-parallel process group on LibTorch's c10d: a TCPStore for rendezvous, Gloo on CPU,
// NCCL on CUDA. Every collective waits at most the group's timeout; a failure becomes a
// trafo::RunError naming the rank that was lost.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "trafo/dist/environment.h"

namespace trafo::dist {

class Group {
 public:
  // Joins the job `environment` describes (world_size > 1). Throws InputError for a bad
  // environment (port in use), RunError when the other ranks do not join within `timeout`.
  Group(const Environment& environment, const c10::Device& device, std::chrono::milliseconds timeout);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_main() const { return rank_ == 0; }
  const std::string& backend() const { return backend_; }

  // Collectives; `tensors` are changed in place. all_reduce_async returns a handle for wait().
  void broadcast(std::vector<at::Tensor>& tensors, int root = 0);
  void all_reduce_sum(std::vector<at::Tensor>& tensors);
  void all_reduce_max(std::vector<at::Tensor>& tensors);
  int all_reduce_async(at::Tensor& tensor);  // sum
  void wait(int handle);
  void barrier();

  // Rank 0's `bytes` (ignored elsewhere), through the store: for data only rank 0 computes.
  std::string share(const std::string& key, const std::string& bytes);

  // Turns a failed collective into a RunError that names the ranks that did not respond.
  [[noreturn]] void fail(const std::string& what, const std::exception& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int size_ = 1;
  std::string backend_;
};

}  // namespace trafo::dist
