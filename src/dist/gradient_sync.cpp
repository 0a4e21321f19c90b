#include "trafo/dist/gradient_sync.h"

#include <chrono>
#include <mutex>

#include <torch/torch.h>

#include "trafo/dist/group.h"

namespace trafo::dist {

struct GradientSync::Impl {
  struct Slot {
    size_t parameter;
    int64_t offset;
  };
  struct Bucket {
    at::Tensor flat;
    std::vector<Slot> slots;
    size_t ready = 0;
    int handle = -1;  // the all-reduce in flight, once started
  };

  Group& group;
  std::vector<at::Tensor> parameters;
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, size_t>> where;  // parameter → (bucket, slot)
  std::vector<bool> filled;
  size_t next_to_start = 0;
  bool armed = false;
  std::mutex mutex;  // hooks may run on autograd's device threads

  Impl(Group& g, std::vector<at::Tensor> p) : group(g), parameters(std::move(p)) {}

  void fill(size_t index, const at::Tensor* incoming) {
    const auto [b, s] = where[index];
    auto& bucket = buckets[b];
    const auto& parameter = parameters[index];
    auto slice = bucket.flat.narrow(0, bucket.slots[s].offset, parameter.numel()).view_as(parameter);
    const auto& accumulated = parameter.grad();
    if (incoming != nullptr) {
      slice.copy_(*incoming);
      if (accumulated.defined()) slice.add_(accumulated);  // earlier micro-batches of this update
    } else if (accumulated.defined()) {
      slice.copy_(accumulated);
    } else {
      slice.zero_();
    }
    filled[index] = true;
    ++bucket.ready;
  }

  void start_ready_buckets() {
    while (next_to_start < buckets.size() && buckets[next_to_start].ready == buckets[next_to_start].slots.size()) {
      auto& bucket = buckets[next_to_start++];
      bucket.handle = group.all_reduce_async(bucket.flat);
    }
  }
};

GradientSync::GradientSync(Group& group, std::vector<at::Tensor> parameters, int64_t bucket_bytes)
    : impl_(std::make_unique<Impl>(group, std::move(parameters))) {
  auto& im = *impl_;
  im.where.resize(im.parameters.size());
  im.filled.assign(im.parameters.size(), false);
  // Reverse order: backward produces the last layers' gradients first.
  std::vector<std::vector<size_t>> groups;
  int64_t bytes_in_group = 0;
  for (size_t i = im.parameters.size(); i-- > 0;) {
    const auto& p = im.parameters[i];
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    if (groups.empty() || (bytes_in_group > 0 && bytes_in_group + bytes > bucket_bytes)) {
      groups.emplace_back();
      bytes_in_group = 0;
    }
    groups.back().push_back(i);
    bytes_in_group += bytes;
  }
  for (const auto& members : groups) {
    Impl::Bucket bucket;
    int64_t offset = 0;
    for (size_t i : members) {
      im.where[i] = {im.buckets.size(), bucket.slots.size()};
      bucket.slots.push_back({i, offset});
      offset += im.parameters[i].numel();
    }
    bucket.flat = torch::zeros({offset}, im.parameters[members.front()].options());
    im.buckets.push_back(std::move(bucket));
  }
  for (size_t i = 0; i < im.parameters.size(); ++i) {
    im.parameters[i].register_hook([this, i](const at::Tensor& grad) {
      auto& im = *impl_;
      std::lock_guard<std::mutex> lock(im.mutex);
      if (!im.armed || im.filled[i]) return;
      im.fill(i, &grad);
      im.start_ready_buckets();
    });
  }
}

GradientSync::~GradientSync() = default;

void GradientSync::arm() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->armed = true;
}

double GradientSync::finish() {
  const auto started = std::chrono::steady_clock::now();
  auto& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.mutex);
    // Parameters whose hooks did not fire (no data on this rank, or not used) send what they hold.
    for (size_t i = 0; i < im.parameters.size(); ++i) {
      if (!im.filled[i]) im.fill(i, nullptr);
    }
    im.start_ready_buckets();
    im.armed = false;
  }
  for (auto& bucket : im.buckets) {
    im.group.wait(bucket.handle);
    for (const auto& slot : bucket.slots) {
      auto& parameter = im.parameters[slot.parameter];
      auto sum = bucket.flat.narrow(0, slot.offset, parameter.numel()).view_as(parameter);
      if (parameter.grad().defined()) {
        parameter.mutable_grad().copy_(sum);
      } else {
        parameter.mutable_grad() = sum.clone();
      }
    }
    bucket.ready = 0;
    bucket.handle = -1;
  }
  im.filled.assign(im.parameters.size(), false);
  im.next_to_start = 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

double GradientSync::time_all_reduce() {
  auto& im = *impl_;
  im.group.barrier();
  const auto started = std::chrono::steady_clock::now();
  for (auto& bucket : im.buckets) bucket.handle = im.group.all_reduce_async(bucket.flat);
  for (auto& bucket : im.buckets) {
    im.group.wait(bucket.handle);
    bucket.handle = -1;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

int64_t GradientSync::buckets() const { return static_cast<int64_t>(impl_->buckets.size()); }

int64_t GradientSync::bytes() const {
  int64_t total = 0;
  for (const auto& bucket : impl_->buckets) total += bucket.flat.numel() * bucket.flat.element_size();
  return total;
}

}  // namespace trafo::dist
