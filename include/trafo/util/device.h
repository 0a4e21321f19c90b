// The device named on the command line: cpu, cuda, or auto (cuda when one is available),
// and the CPU threads.
#pragma once

#include <string>

#include <c10/core/Device.h>

namespace trafo::util {

// Throws trafo::InputError for "cuda" on a machine without a CUDA device. Choosing CUDA turns
// cuDNN's attention kernel off for the process (device.cpp says why).
c10::Device resolve_device(const std::string& name);

// Waits for the work queued on `device` (CUDA); a no-op on the CPU, whose ops return when done.
void synchronize(const c10::Device& device);

// --threads: `requested`, or every core of the machine for 0. The one check of --threads for
// every command: throws trafo::InputError below 0 or above 1024.
int resolve_threads(int requested);

// Threads for --threads 0 on a machine others may share: the cores that other processes leave free,
// at least one. OpenMP's idle threads spin while they wait for work; beside a busy process on a
// 2-core machine, 2 threads trained at a fifth of their speed and 1 thread at over half
// (README "A shared machine").
int threads_for_load(int cores, double busy_cores_of_others);

// How many cores processes other than this one kept busy between two calls of busy_cores(), from
// /proc/stat's busy time less this process's own (/proc/self/stat). test_hooks().other_load poses
// a number (tests; trafo/test_hooks.h); without /proc it answers 0.
class LoadMeter {
 public:
  LoadMeter();  // the first reading
  double busy_cores();

 private:
  struct Reading {
    double busy_ticks = 0, total_ticks = 0, own_ticks = 0;
  };
  static Reading read();
  Reading last_;
};

// Others' busy cores over a `seconds` look at the machine (for a command's start).
double busy_cores_of_others(double seconds);

// resolve_threads, where 0 is the cores others leave free after a 0.1 s look (eval, translate, bench).
int threads_following_load(int requested);

}  // namespace trafo::util
