// bf16 autocast on one device type for the lifetime of the guard (docs/design.md "Precision": master weights and
// the loss stay fp32; the cast cache is cleared after each step). Training runs each step under
// one; decoding in bf16 runs each translate call under one, so each weight is cast once a call.
// Guards nest as torch.autocast does: each restores the state it found, and the cast cache is
// cleared when the outermost one ends.
#pragma once

#include <ATen/autocast_mode.h>

namespace trafo::util {

class AutocastGuard {
 public:
  AutocastGuard(bool enabled, c10::DeviceType type)
      : enabled_(enabled),
        type_(type),
        was_enabled_(at::autocast::is_autocast_enabled(type)),
        was_dtype_(at::autocast::get_autocast_dtype(type)) {
    if (!enabled_) return;
    at::autocast::set_autocast_dtype(type_, at::kBFloat16);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(type_, was_enabled_);
    at::autocast::set_autocast_dtype(type_, was_dtype_);
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  c10::DeviceType type_;
  bool was_enabled_;
  at::ScalarType was_dtype_;
};

}  // namespace trafo::util
