// A LibTorch archive checked before LibTorch unpickles it. Its Unpickler trusts the numbers in a
// pickle: a memo slot number makes it grow its memo table to that size, a string's length makes
// it allocate that many bytes, before anything else is read. One changed number can ask for any
// amount of memory (fuzz/findings/checkpoint/huge-alloc-unpickler asked for 26 GB).
#pragma once

#include <cstddef>
#include <string>

namespace trafo::checkpoint {

// Throws trafo::InputError naming `what` when a pickle of the zip archive `data` (its *.pkl
// records) numbers a memo slot beyond those it has filled, or gives a string or bytes a length
// beyond the pickle's end. Opcodes it does not know end its walk: LibTorch refuses them itself.
void check_archive(const char* data, size_t size, const std::string& what);

// The same check of one pickle's bytes.
void check_pickle(const char* data, size_t size, const std::string& what);

}  // namespace trafo::checkpoint
