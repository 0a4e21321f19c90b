// Built with USE_C10D_NCCL where nccl.h (the wheel's nvidia-nccl) and the CUDA toolkit are found.
#include "backends.h"

#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace trafo::dist {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    const c10::Device& device, std::chrono::milliseconds timeout) {
  c10::cuda::set_device(device.index());
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

}  // namespace trafo::dist
