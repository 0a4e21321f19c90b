// What the export formats share (internal to deploy/): a file's JSON text, and a checkpoint weight by
// name with the error a format meets when it is missing.
#pragma once

#include <map>
#include <string>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "trafo/errors.h"

namespace trafo::deploy {

// Indented, with a final line break, as the formats' own tools write their JSON files.
inline std::string json_text(const nlohmann::json& value) { return value.dump(2) + "\n"; }

// The weight `name` of `weights`; trafo::InputError when the checkpoint has none.
inline const at::Tensor& checkpoint_weight(const std::map<std::string, at::Tensor>& weights, const std::string& name) {
  const auto found = weights.find(name);
  if (found == weights.end()) throw InputError("the checkpoint has no weight " + name);
  return found->second;
}

}  // namespace trafo::deploy
