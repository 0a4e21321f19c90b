#include "trafo/dist/group.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <c10/util/Logging.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "backends.h"
#include "trafo/errors.h"

namespace trafo::dist {
namespace {

std::string first_line(const std::string& text) {
  constexpr size_t kMaxLength = 240;
  auto line = text.substr(0, text.find('\n'));
  return line.size() > kMaxLength ? line.substr(0, kMaxLength) + "..." : line;
}

std::string seconds(std::chrono::milliseconds timeout) {
  return std::to_string(timeout.count() / 1000) + " s";
}

c10::intrusive_ptr<c10d::Store> connect_store(const Environment& e, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(e.master_port);
  options.timeout = timeout;
  options.waitWorkers = false;
  const bool server = e.rank == 0 && !e.agent_store;
  if (server) {
    options.isServer = true;
    options.numWorkers = e.world_size;
    options.masterListenFd = e.listen_fd >= 0 ? e.listen_fd : listen_on(e.master_addr, e.master_port);
  }
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(e.master_addr, options);
    return c10::make_intrusive<c10d::PrefixStore>(e.store_prefix, store);
  } catch (const std::exception& error) {
    throw RunError("rank " + std::to_string(e.rank) + ": cannot reach the rendezvous store at " + e.master_addr + ":" +
                   std::to_string(e.master_port) + " within " + seconds(timeout) + " (" + first_line(error.what()) + ")");
  }
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const Environment& e) {
  if (const char* name = std::getenv("GLOO_SOCKET_IFNAME")) return c10d::ProcessGroupGloo::createDeviceForInterface(name);
  if (is_loopback(e.master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

struct Group::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending;
  std::chrono::milliseconds timeout;
  bool store_on_rank0 = true;

  void run(Group& group, const std::string& what, const c10::intrusive_ptr<c10d::Work>& work) {
    try {
      work->wait();
    } catch (const std::exception& error) {
      group.fail(what, error);
    }
  }
};

Group::Group(const Environment& e, const c10::Device& device, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()), rank_(e.rank), size_(e.world_size) {
  // c10d logs each socket error as a warning with a stack trace; the failure reaches the user
  // as one line through fail() instead. TORCH_CPP_LOG_LEVEL still wins when set.
  if (std::getenv("TORCH_CPP_LOG_LEVEL") == nullptr) FLAGS_caffe2_log_level = std::max(FLAGS_caffe2_log_level, 2);
  impl_->timeout = timeout;
  impl_->store_on_rank0 = !e.agent_store;
  impl_->store = connect_store(e, timeout);
  backend_ = device.is_cuda() ? "nccl" : "gloo";
  try {
    if (device.is_cuda()) {
      impl_->backend = make_nccl_backend(c10::make_intrusive<c10d::PrefixStore>("nccl/", impl_->store), rank_, size_,
                                         device, timeout);
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(gloo_device(e));
      impl_->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(
          c10::make_intrusive<c10d::PrefixStore>("gloo/", impl_->store), rank_, size_, options);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& error) {
    throw RunError("rank " + std::to_string(rank_) + ": the " + std::to_string(size_) + " ranks did not all join within " +
                   seconds(timeout) + " (" + first_line(error.what()) + ")");
  }
}

Group::~Group() = default;

void Group::broadcast(std::vector<at::Tensor>& tensors, int root) {
  c10d::BroadcastOptions options;
  options.rootRank = root;
  impl_->run(*this, "broadcast", impl_->backend->broadcast(tensors, options));
}

void Group::all_reduce_sum(std::vector<at::Tensor>& tensors) {
  impl_->run(*this, "all-reduce", impl_->backend->allreduce(tensors, c10d::AllreduceOptions{}));
}

void Group::all_reduce_max(std::vector<at::Tensor>& tensors) {
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  impl_->run(*this, "all-reduce", impl_->backend->allreduce(tensors, options));
}

int Group::all_reduce_async(at::Tensor& tensor) {
  std::vector<at::Tensor> tensors = {tensor};
  try {
    impl_->pending.push_back(impl_->backend->allreduce(tensors, c10d::AllreduceOptions{}));
  } catch (const std::exception& error) {
    fail("all-reduce", error);
  }
  return static_cast<int>(impl_->pending.size()) - 1;
}

void Group::wait(int handle) {
  auto work = std::move(impl_->pending.at(handle));
  impl_->run(*this, "gradient all-reduce", work);
  bool all_done = true;
  for (const auto& w : impl_->pending) all_done = all_done && !w;
  if (all_done) impl_->pending.clear();
}

void Group::barrier() {
  impl_->run(*this, "barrier", impl_->backend->barrier(c10d::BarrierOptions{}));
}

std::string Group::share(const std::string& key, const std::string& bytes) {
  try {
    if (is_main()) impl_->store->set(key, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    const auto value = impl_->store->get(key);
    return std::string(value.begin(), value.end());
  } catch (const std::exception& error) {
    fail("sharing " + key, error);
  }
}

void Group::fail(const std::string& what, const std::exception& error) {
  // The ranks still alive each leave a mark; those without one after a moment are the lost ones.
  std::string lost;
  try {
    impl_->store->setTimeout(std::chrono::seconds(5));
    impl_->store->set("failed/" + std::to_string(rank_), std::vector<uint8_t>{1});
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && !impl_->store->check({"failed/" + std::to_string(r)})) {
        lost += (lost.empty() ? "" : ", ") + std::to_string(r);
      }
    }
  } catch (const std::exception&) {
    lost = impl_->store_on_rank0 ? "0 (it hosts the rendezvous store)" : "hosting the rendezvous store (torchrun's agent)";
  }
  if (lost.empty()) lost = "none named (all ranks reported the failure)";
  throw RunError("rank " + std::to_string(rank_) + ": lost rank " + lost + ": " + what + " failed within " +
                 seconds(impl_->timeout) + " (" + first_line(error.what()) + ")");
}

}  // namespace trafo::dist
