#include "trafo/train/step_graphs.h"

#include <map>
#include <string>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/train/shape_buckets.h"

#if __has_include(<ATen/cuda/CUDAGraph.h>) && __has_include(<cuda_runtime_api.h>)
#define TRAFO_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace trafo::train {

#ifdef TRAFO_CUDA_GRAPHS

namespace {

// A bucket's graph and the tensors it reads and writes, fixed at capture.
struct Bucket {
  int64_t seen = 0;
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // set once captured
  StepInputs inputs;
  at::Tensor figures;
};

}  // namespace

struct StepGraphs::Impl {
  c10::Device device;
  int64_t max_graphs;
  c10::cuda::CUDAStream stream;
  std::map<BatchShape, Bucket> buckets;
  at::cuda::MempoolId_t pool{0, 0};
  int64_t captured = 0;
  int64_t replays = 0;
  std::string failure;

  Impl(const c10::Device& d, int64_t max)
      : device(d), max_graphs(max), stream(c10::cuda::getStreamFromPool(false, d.index() < 0 ? c10::cuda::current_device() : d.index())) {}

  // `batch`'s ids into the bucket's inputs (made the first time), through pinned memory.
  void put(Bucket& bucket, const data::Batch& batch, double tokens, double lr) {
    const auto ids = [&](const at::Tensor& host, at::Tensor& slot) {
      const auto pinned = host.pin_memory();
      if (!slot.defined()) slot = torch::empty(host.sizes(), host.options().device(device));
      slot.copy_(pinned, /*non_blocking=*/true);
    };
    ids(batch.source, bucket.inputs.source);
    ids(batch.target_input, bucket.inputs.target_input);
    ids(batch.target_output, bucket.inputs.target_output);
    const auto scalar = torch::TensorOptions().dtype(torch::kFloat).device(device);
    if (!bucket.inputs.tokens.defined()) bucket.inputs.tokens = torch::empty({}, scalar);
    if (!bucket.inputs.lr.defined()) bucket.inputs.lr = torch::empty({}, scalar);
    bucket.inputs.tokens.fill_(tokens);
    bucket.inputs.lr.fill_(lr);
  }

  // Captures `step` over the bucket's inputs; false (and captures stop) when the capture fails.
  bool capture(Bucket& bucket, const Step& step) {
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    try {
      c10::cuda::device_synchronize();
      // The eager steps' cached blocks go back to the driver: the graphs' pool takes fresh memory,
      // and at a fitted budget what the eager pool keeps cached would leave it none.
      c10::cuda::CUDACachingAllocator::emptyCache();
      graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
      try {
        bucket.figures = step(bucket.inputs);
      } catch (...) {
        try {
          graph->capture_end();
        } catch (...) {
        }
        throw;
      }
      graph->capture_end();
    } catch (const std::exception& e) {
      failure = std::string(e.what()).substr(0, 300);
      const auto newline = failure.find('\n');
      if (newline != std::string::npos) failure.resize(newline);
      spdlog::warn("CUDA graphs: a capture failed, training goes on without graphs: {}", failure);
      bucket.figures = at::Tensor();
      (void)cudaGetLastError();  // a failed capture leaves its error behind
      return false;
    }
    if (captured == 0) pool = graph->pool();
    bucket.graph = std::move(graph);
    ++captured;
    return true;
  }
};

StepGraphs::StepGraphs(const c10::Device& device, int64_t max_graphs)
    : impl_(std::make_unique<Impl>(device, max_graphs)) {}

StepGraphs::~StepGraphs() = default;

bool StepGraphs::built() { return true; }

DeviceValues StepGraphs::run(const data::Batch& batch, double tokens, double lr, const Step& step) {
  auto& s = *impl_;
  const auto caller = c10::cuda::getCurrentCUDAStream(s.stream.device_index());
  at::cuda::CUDAEvent ready;
  ready.record(caller);
  ready.block(s.stream);
  DeviceValues figures;
  {
    const c10::cuda::CUDAStreamGuard on_stream(s.stream);
    auto& bucket = s.buckets[shape_of(batch)];
    ++bucket.seen;
    s.put(bucket, batch, tokens, lr);
    const bool capture_now = !bucket.graph && bucket.seen >= 2 && s.failure.empty() && s.captured < s.max_graphs;
    if (capture_now) s.capture(bucket, step);  // records the step without running it: the replay below runs it
    if (bucket.graph) {
      bucket.graph->replay();
      ++s.replays;
      figures = DeviceValues(bucket.figures);
    } else {
      figures = DeviceValues(step(bucket.inputs));
    }
  }
  at::cuda::CUDAEvent done;
  done.record(s.stream);
  done.block(caller);
  return figures;
}

int64_t StepGraphs::captured() const { return impl_->captured; }
int64_t StepGraphs::replays() const { return impl_->replays; }
const std::string& StepGraphs::failure() const { return impl_->failure; }

#else  // a LibTorch without CUDA: no graphs, never used (built() is false)

struct StepGraphs::Impl {
  std::string failure = "this build of trafo has no CUDA graphs";
};

StepGraphs::StepGraphs(const c10::Device&, int64_t) : impl_(std::make_unique<Impl>()) {}
StepGraphs::~StepGraphs() = default;
bool StepGraphs::built() { return false; }
DeviceValues StepGraphs::run(const data::Batch&, double, double, const Step&) {
  throw std::logic_error("StepGraphs::run: built without CUDA graphs");
}
int64_t StepGraphs::captured() const { return 0; }
int64_t StepGraphs::replays() const { return 0; }
const std::string& StepGraphs::failure() const { return impl_->failure; }

#endif

}  // namespace trafo::train
