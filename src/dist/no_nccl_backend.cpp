// Stands in for nccl_backend.cpp where the build found no NCCL.
#include "backends.h"

#include "trafo/errors.h"

namespace trafo::dist {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                    const c10::Device&, std::chrono::milliseconds) {
  throw InputError("this trafo was built without NCCL: data-parallel training on CUDA is not available");
}

}  // namespace trafo::dist
