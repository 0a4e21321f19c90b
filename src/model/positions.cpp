#include "trafo/model/positions.h"

#include <cmath>

#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::model {

SinusoidalPositionsImpl::SinusoidalPositionsImpl(int64_t max_positions, int64_t d_model, bool halves) {
  auto position = torch::arange(max_positions, torch::kFloat).unsqueeze(1);               // [P,1]
  auto even = torch::arange(0, d_model, 2, torch::kFloat);                                // [d/2]
  auto inverse_frequency = torch::exp(even * (-std::log(10000.0) / static_cast<double>(d_model)));
  auto angles = position * inverse_frequency;                                             // [P,d/2]
  auto table = torch::zeros({max_positions, d_model});
  table.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)}, torch::sin(angles));
  auto odd = torch::cos(angles).narrow(1, 0, d_model / 2);
  table.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)}, odd);
  if (halves) {  // the same columns, sines first: [P,d]
    using torch::indexing::Slice;
    table = torch::cat({table.index({Slice(), Slice(0, torch::indexing::None, 2)}),
                        table.index({Slice(), Slice(1, torch::indexing::None, 2)})}, 1);
  }
  table_ = register_buffer("table", table.contiguous());
}

torch::Tensor SinusoidalPositionsImpl::embed(const torch::Tensor& x, int64_t offset) {
  const int64_t length = x.size(1);
  TORCH_CHECK(offset + length <= table_.size(0), "sequence of ", offset + length,
              " positions exceeds max-positions ", table_.size(0));
  return x + table_.narrow(0, offset, length).to(x.dtype());  // [B,T,d]
}

torch::Tensor SinusoidalPositionsImpl::embed_rows(const torch::Tensor& x, const torch::Tensor& positions) {
  return x + table_.index_select(0, positions).unsqueeze(1).to(x.dtype());  // [B,1,d]
}

const std::vector<PositionKind>& position_kinds() {
  static const std::vector<PositionKind> kinds = {
      {"sinusoidal",
       [](const ModelConfig& c) -> std::shared_ptr<PositionEncodingImpl> {
         return std::make_shared<SinusoidalPositionsImpl>(c.max_positions, c.d_model, /*halves=*/false);
       },
       [](const ModelConfig& c) {
         return std::map<std::string, std::vector<int64_t>>{{"table", {c.max_positions, c.d_model}}};
       },
       "positions.table"},
      {"sinusoidal-halves",
       [](const ModelConfig& c) -> std::shared_ptr<PositionEncodingImpl> {
         return std::make_shared<SinusoidalPositionsImpl>(c.max_positions, c.d_model, /*halves=*/true);
       },
       [](const ModelConfig& c) {
         return std::map<std::string, std::vector<int64_t>>{{"table", {c.max_positions, c.d_model}}};
       },
       "positions.table"},
  };
  return kinds;
}

const PositionKind& position_kind(const std::string& name) {
  std::string names;
  for (const auto& kind : position_kinds()) {
    if (name == kind.name) return kind;
    names += (names.empty() ? "" : ", ") + std::string(kind.name);
  }
  throw InputError("invalid model config: positions must be " + names + ", not '" + name + "'");
}

}  // namespace trafo::model
