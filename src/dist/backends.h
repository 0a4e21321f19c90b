// c10d backends that need their own compile flags: NCCL is built only where its header and
// CUDA are found (src/dist/nccl_backend.cpp), a stub says so otherwise.
#pragma once

#include <chrono>

#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace trafo::dist {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    const c10::Device& device, std::chrono::milliseconds timeout);

}  // namespace trafo::dist
