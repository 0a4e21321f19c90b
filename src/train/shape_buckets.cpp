#include "trafo/train/shape_buckets.h"

#include <stdexcept>

#include <torch/torch.h>

#include "trafo/special_ids.h"

namespace trafo::train {

BatchShape shape_of(const data::Batch& batch) {
  return {batch.source.size(0), batch.source.size(1), batch.target_input.size(1)};
}

int64_t bucket_size(int64_t n) {
  const auto round_up = [](int64_t value, int64_t step) { return (value + step - 1) / step * step; };
  if (n <= 16) return round_up(std::max<int64_t>(n, 1), 2);
  if (n <= 64) return round_up(n, 4);
  if (n <= 128) return round_up(n, 8);
  int64_t step = 128;
  while (step < n) step = round_up(step + step / 32, 8);  // about 3% a step
  return step;
}

BatchShape bucket_of(const BatchShape& shape) {
  return {bucket_size(shape.rows), bucket_size(shape.source), bucket_size(shape.target)};
}

data::Batch padded_to(const data::Batch& batch, const BatchShape& shape) {
  const auto have = shape_of(batch);
  if (have == shape) return batch;
  if (shape.rows < have.rows || shape.source < have.source || shape.target < have.target) {
    throw std::logic_error("padded_to: the shape does not hold the batch");
  }
  data::Batch out = batch;
  const auto grow = [&](const at::Tensor& ids, int64_t width) {
    auto padded = torch::full({shape.rows, width}, kPadId, ids.options());
    padded.narrow(0, 0, have.rows).narrow(1, 0, ids.size(1)).copy_(ids);
    return padded;
  };
  out.source = grow(batch.source, shape.source);
  out.target_input = grow(batch.target_input, shape.target);
  out.target_output = grow(batch.target_output, shape.target);
  if (batch.alignment.defined()) {  // no links in the added rows and places
    out.alignment = torch::zeros({shape.rows, shape.target, shape.source}, batch.alignment.options());
    out.alignment.narrow(0, 0, have.rows)
        .narrow(1, 0, batch.alignment.size(1))
        .narrow(2, 0, batch.alignment.size(2))
        .copy_(batch.alignment);
  }
  if (shape.rows > have.rows) {
    // Added rows: something to attend to, nothing to predict.
    out.source.narrow(0, have.rows, shape.rows - have.rows).select(1, 0).fill_(kEosId);
    out.target_input.narrow(0, have.rows, shape.rows - have.rows).select(1, 0).fill_(kBosId);
  }
  return out;
}

}  // namespace trafo::train
