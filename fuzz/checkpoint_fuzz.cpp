// The checkpoint loader on arbitrary bytes: checkpoint::load, then checkpoint::make_model
// and data::Tokenizer::from_bytes on what it returns, as `trafo translate` and `trafo eval` do.
// Seeds: real tiny checkpoints (fuzz/corpus/checkpoint/, and fresh ones from scripts/fuzz.sh).
// Input: the file's bytes; the last byte's low bit also chooses with or without training state, and
// its next bit whether the checksum is set right before loading (as a tool that writes its own
// files would): without that, nearly every mutation stops at the checksum and the header's reader
// behind it is never reached.
// Only safetensors files (format 3, an 8-byte header length then '{') are tried: the reader of
// today's checkpoints. Format 2 files are LibTorch archives behind a checksum, read only for old
// runs; format 1 is refused before anything is read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ATen/Parallel.h>
#include <c10/core/Device.h>

#include "fuzz_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/checkpoint/safetensors.h"
#include "trafo/data/tokenizer.h"

using namespace trafo;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!checkpoint::looks_like_safetensors(std::string(reinterpret_cast<const char*>(data), std::min<size_t>(size, 16)))) {
    return 0;
  }
  const bool with_training_state = size > 0 && (data[size - 1] & 1);
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && (data[size - 1] & 2)) {
    try {
      bytes = checkpoint::with_checksum(std::move(bytes));
    } catch (const InputError&) {
      bytes.assign(reinterpret_cast<const char*>(data), size);  // no single checksum entry: as it is
    }
  }
  const auto path = fuzz::write_scratch("checkpoint.pt", bytes);
  checkpoint::Checkpoint loaded;
  if (!fuzz::expect_trafo_errors("checkpoint::load", [&] { loaded = checkpoint::load(path, with_training_state); })) {
    return 0;
  }
  fuzz::check(with_training_state || !loaded.training, "training state read although not asked for");
  fuzz::expect_trafo_errors("checkpoint::make_model", [&] {
    const auto model = checkpoint::make_model(loaded, c10::Device(c10::kCPU));
    fuzz::check(!model->is_training(), "make_model returned a model in training mode");
  });
  fuzz::expect_trafo_errors("Tokenizer::from_bytes", [&] {
    const auto tokenizer = data::Tokenizer::from_bytes(loaded.tokenizer);
    tokenizer.decode(tokenizer.encode("The man sees the dog."));
  });
  return 0;
}
