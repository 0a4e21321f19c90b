// The device named on the command line: cpu, cuda, or auto (cuda when one is available).
#pragma once

#include <string>

#include <c10/core/Device.h>

namespace trafo::util {

// Throws trafo::InputError for "cuda" on a machine without a CUDA device.
c10::Device resolve_device(const std::string& name);

}  // namespace trafo::util
