#include "placement.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>

#include "trafo/train/step_graphs.h"

namespace trafo::train {
using run_config::TrainConfig;
namespace {

// With --threads 0 in a single process, the run follows the load of the machine (util::threads_for_load).
std::optional<util::LoadMeter> make_load_meter(const TrainConfig& c, const dist::Environment& environment) {
  if (c.machine.threads != 0 || environment.local_world_size > 1 || environment.distributed()) return std::nullopt;
  return util::LoadMeter();
}

// Sets and returns this process's threads: ranks on one machine share its cores (--nproc always;
// under torchrun when --threads is left at 0); a single process with --threads 0 takes the cores
// other processes leave free, looked at for 0.1 s.
int use_threads(const TrainConfig& c, const dist::Environment& environment, std::optional<util::LoadMeter>& load,
                double& busy_others) {
  int threads = util::resolve_threads(c.machine.threads);
  if (environment.local_world_size > 1 && (environment.launched || c.machine.threads == 0)) {
    threads = std::max(1, threads / environment.local_world_size);
  }
  if (load) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    busy_others = load->busy_cores();
    threads = util::threads_for_load(threads, busy_others);
  }
  at::set_num_threads(threads);
  return threads;
}

std::chrono::milliseconds timeout(const TrainConfig& c) {
  return std::chrono::milliseconds(static_cast<int64_t>(c.parallel.dist_timeout * 1000.0));
}

}  // namespace

c10::Device pick_device(const TrainConfig& c, const dist::Environment& environment) {
  auto device = util::resolve_device(c.machine.device);
  if (device.is_cuda() && environment.distributed()) device = torch::Device(torch::kCUDA, environment.local_rank);
  return device;
}

bool graphs_apply(const TrainConfig& c) {
  return c.optim.accumulate == 1 && c.model.encoder_layerdrop == 0.0 && c.model.decoder_layerdrop == 0.0 &&
         !run_config::guided(c);
}

Placement::Placement(const TrainConfig& c, const dist::Environment& environment)
    : load(make_load_meter(c, environment)),
      threads(use_threads(c, environment, load, busy_at_start)),
      device(pick_device(c, environment)),
      timer(c, device),
      precision(runtime::pick_precision(c.machine.precision, device, "training",
                                        [&] { return timer.bf16_speedup(/*graphs=*/c.machine.cuda_graphs != "off"); })),
      replicas(environment, device, timeout(c)) {
  if (!device.is_cuda()) return;
  cuda_graphs = false;
  if (c.machine.cuda_graphs == "off") {
    cuda_graphs_reason = "CUDA graphs off (--cuda-graphs off)";
  } else if (!StepGraphs::built()) {
    cuda_graphs_reason = "CUDA graphs off: this build of trafo has none";
  } else if (!graphs_apply(c) || replicas.size() > 1) {
    cuda_graphs_reason = "CUDA graphs off: they need one process, --accumulate 1, no LayerDrop and no guided alignment";
  } else if (c.machine.cuda_graphs == "on") {
    cuda_graphs = true;
    cuda_graphs_reason = "CUDA graphs on (--cuda-graphs on)";
  } else {
    const double with = timer.seconds(precision.bf16, true), without = timer.seconds(precision.bf16, false);
    cuda_graphs = with < without;
    cuda_graphs_reason = fmt::format("CUDA graphs {}: --cuda-graphs auto, {} steps of this model ran {:.2f}x as fast "
                                     "replayed (padded to shape buckets) as eagerly",
                                     cuda_graphs ? "on" : "off", precision.name(), without / std::max(with, 1e-9));
  }
  if (cuda_graphs) {
    cuda_graphs_reason += "; each shape bucket's step is captured the second time it comes and replayed after";
  }
}

}  // namespace trafo::train
