// bf16 autocast on one device type for the lifetime of the guard (DESIGN.md: master weights and
// the loss stay fp32; the cast cache is cleared after each step). Training runs each step under
// one; decoding in bf16 runs each translate call under one, so each weight is cast once a call.
#pragma once

#include <ATen/autocast_mode.h>

namespace trafo::util {

class AutocastGuard {
 public:
  AutocastGuard(bool enabled, c10::DeviceType type) : enabled_(enabled), type_(type) {
    if (!enabled_) return;
    at::autocast::set_autocast_dtype(type_, at::kBFloat16);
    at::autocast::set_autocast_enabled(type_, true);
  }
  ~AutocastGuard() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(type_, false);
    at::autocast::clear_cache();
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  c10::DeviceType type_;
};

}  // namespace trafo::util
