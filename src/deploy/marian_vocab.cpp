#include "marian_vocab.h"

#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::deploy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A name no piece of `taken` has: `name`, else it in more angle brackets.
std::string free_name(std::string name, const std::set<std::string>& taken) {
  while (taken.count(name) > 0) name = "<" + name + ">";
  return name;
}

}  // namespace

std::vector<std::string> pieces_by_id(const json& vocab, int64_t size, const fs::path& path) {
  std::vector<std::string> pieces(static_cast<size_t>(size));
  std::vector<bool> seen(static_cast<size_t>(size), false);
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= size) {
      throw InputError(path.string() + ": the id of '" + piece + "' is not in 0 .. " + std::to_string(size - 1));
    }
    const auto at = static_cast<size_t>(id.get<int64_t>());
    if (seen[at]) throw InputError(path.string() + ": two pieces have id " + std::to_string(at));
    seen[at] = true;
    pieces[at] = piece;
  }
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (!seen[id]) throw InputError(path.string() + " has no piece for id " + std::to_string(id));
  }
  return pieces;
}

int64_t piece_id(const json& vocab, const std::string& piece, const fs::path& path) {
  if (!vocab.contains(piece)) throw InputError(path.string() + " lacks the special piece " + piece);
  return vocab[piece].get<int64_t>();
}

Side side_of(const std::vector<std::string>& pieces, int64_t pad, int64_t unk, int64_t start, int64_t eos,
             const fs::path& path) {
  const auto size = static_cast<int64_t>(pieces.size());
  for (const int64_t id : {pad, unk, start, eos}) {
    if (id < 0 || id >= size) throw InputError(path.string() + ": a special id outside the vocabulary");
  }
  if (std::set<int64_t>{pad, unk, eos}.size() != 3 || start == unk || start == eos) {
    throw InputError(path.string() + ": pad, unk, eos and the decoder's start are not distinct pieces");
  }
  Side side;
  side.rows = {pad, unk, start, eos};
  for (int64_t id = 0; id < size; ++id) {
    if (id != pad && id != unk && id != eos && id != start) side.rows.push_back(id);
  }
  for (const auto row : side.rows) side.table.push_back(pieces[static_cast<size_t>(row)]);
  if (start == pad) side.table[2] = free_name("<s>", {pieces.begin(), pieces.end()});
  return side;
}

void grow(Side& side, size_t size) {
  const std::set<std::string> taken(side.table.begin(), side.table.end());
  for (size_t id = side.table.size(); id < size; ++id) {
    side.table.push_back(free_name("<unused-" + std::to_string(id) + ">", taken));
  }
}

at::Tensor reordered(const at::Tensor& matrix, const Side& side, int64_t size) {
  const auto rows = matrix.index_select(0, torch::tensor(side.rows, torch::kLong));
  if (rows.size(0) == size) return rows;
  auto shape = rows.sizes().vec();
  shape[0] = size - rows.size(0);
  return torch::cat({rows, torch::zeros(shape, rows.options())}, 0);
}

}  // namespace trafo::deploy
