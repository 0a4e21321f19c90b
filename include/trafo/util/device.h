// The device named on the command line: cpu, cuda, or auto (cuda when one is available),
// and the CPU threads.
#pragma once

#include <string>

#include <c10/core/Device.h>

namespace trafo::util {

// Throws trafo::InputError for "cuda" on a machine without a CUDA device.
c10::Device resolve_device(const std::string& name);

// Waits for the work queued on `device` (CUDA); a no-op on the CPU, whose ops return when done.
void synchronize(const c10::Device& device);

// --threads: `requested`, or every core of the machine for 0. The one check of --threads for
// every command: throws trafo::InputError below 0 or above 1024.
int resolve_threads(int requested);

}  // namespace trafo::util
