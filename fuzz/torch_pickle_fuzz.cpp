// The reader of torch.save's format before PyTorch 1.6 (trafo import's older pytorch_model.bin) on
// arbitrary bytes: deploy::read_legacy_state_dict, a restricted unpickler. Seeds: small state dicts
// saved by PyTorch in that format (fuzz/corpus/torch_pickle/). Inputs that do not start with the
// format's magic number are given it, so that mutations reach the pickles behind it.
#include <cstddef>
#include <cstdint>
#include <string>

#include <ATen/Parallel.h>

#include "../src/deploy/torch_legacy.h"
#include "fuzz_support.h"

using namespace trafo;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!deploy::is_legacy_torch_save(bytes)) {
    bytes = std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15) + bytes;
  }
  fuzz::expect_trafo_errors("read_legacy_state_dict", [&] {
    const auto weights = deploy::read_legacy_state_dict(bytes, "input.bin");
    for (const auto& [name, tensor] : weights) {
      fuzz::check(tensor.defined(), "a weight without a tensor: " + name);
      (void)tensor.sum().item<double>();  // every element can be read
    }
  });
  return 0;
}
