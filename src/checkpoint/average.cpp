#include "trafo/checkpoint/average.h"

#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::checkpoint {

namespace fs = std::filesystem;

Checkpoint average(const std::vector<fs::path>& paths) {
  if (paths.empty()) throw InputError("no checkpoints to average");
  Checkpoint first = load(paths.front(), /*with_training_state=*/false);
  std::map<std::string, at::Tensor> sums;
  for (const auto& [name, weight] : first.weights) {
    sums[name] = weight.is_floating_point() ? weight.to(torch::kDouble) : weight;
  }
  for (size_t i = 1; i < paths.size(); ++i) {
    const Checkpoint other = load(paths[i], /*with_training_state=*/false);
    const auto differences = model::describe_differences(first.model_config, other.model_config);
    if (!differences.empty()) {
      throw InputError(paths[i].string() + " is another model than " + paths.front().string() + ": " + differences);
    }
    if (other.tokenizer != first.tokenizer) {
      throw InputError(paths[i].string() + " has another tokenizer than " + paths.front().string());
    }
    // The same config need not mean the same weights in a file that was tampered with.
    if (other.weights.size() != sums.size()) {
      throw InputError(paths[i].string() + " holds other weights than " + paths.front().string());
    }
    for (auto& [name, sum] : sums) {
      const auto found = other.weights.find(name);
      if (found == other.weights.end() || found->second.sizes() != sum.sizes() ||
          found->second.is_floating_point() != sum.is_floating_point()) {
        throw InputError(paths[i].string() + " has no weight " + name + " shaped as in " + paths.front().string());
      }
      if (sum.is_floating_point()) sum += found->second.to(torch::kDouble);
    }
  }
  const double count = static_cast<double>(paths.size());
  for (auto& [name, weight] : first.weights) {
    const auto& sum = sums.at(name);
    if (sum.is_floating_point()) weight = (sum / count).to(weight.scalar_type());
  }
  first.training.reset();
  return first;
}

std::vector<fs::path> last_numbered(const fs::path& run_dir, int64_t count) {
  if (!fs::is_directory(run_dir)) throw InputError(run_dir.string() + " is not a run folder");
  std::vector<std::pair<int64_t, fs::path>> found;
  try {
    found = numbered_checkpoints(run_dir);
  } catch (const fs::filesystem_error& e) {
    throw InputError("cannot list " + run_dir.string() + ": " + e.code().message());
  }
  if (static_cast<int64_t>(found.size()) < count) {
    throw InputError(run_dir.string() + " holds " + std::to_string(found.size()) +
                     " numbered checkpoints (checkpoint-STEP.pt), fewer than the " + std::to_string(count) +
                     " asked for");
  }
  std::vector<fs::path> last;
  for (auto it = found.end() - count; it != found.end(); ++it) last.push_back(it->second);
  return last;
}

}  // namespace trafo::checkpoint
