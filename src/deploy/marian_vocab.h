// MarianMT's vocabularies in trafo's order (marian_import.cpp): trafo's special ids are fixed (pad 0,
// unk 1, bos 2, eos 3), MarianMT's are the config's, so each side's rows are reordered on import.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace trafo::deploy {

// vocab.json's pieces by id; InputError unless its ids are 0 .. size - 1, each once.
std::vector<std::string> pieces_by_id(const nlohmann::json& vocab, int64_t size, const std::filesystem::path& path);

// The id of a special piece; InputError naming `path` when the vocabulary lacks it.
int64_t piece_id(const nlohmann::json& vocab, const std::string& piece, const std::filesystem::path& path);

// One side's vocabulary in trafo's order: trafo's row r is MarianMT's row rows[r] (pad, unk, the
// decoder's start as bos, eos, then the rest), and table[r] its piece.
struct Side {
  std::vector<int64_t> rows;
  std::vector<std::string> table;
};

// InputError naming `path` for special ids outside the vocabulary or not distinct. Where decoding
// starts from pad, the start row's piece is a free name for <s>.
Side side_of(const std::vector<std::string>& pieces, int64_t pad, int64_t unk, int64_t start, int64_t eos,
             const std::filesystem::path& path);

// `side`'s table grown to `size` with pieces no text gives; none where it is as long already.
void grow(Side& side, size_t size);

// `matrix`'s rows in `side`'s order, then zero rows up to `size`.
at::Tensor reordered(const at::Tensor& matrix, const Side& side, int64_t size);

}  // namespace trafo::deploy
