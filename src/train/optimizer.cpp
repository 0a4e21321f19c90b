#include "trafo/train/optimizer.h"

#include <optional>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::train {
namespace {

// The device's count of applied steps for each parameter, which bias-corrects its moments. The
// host's count in the base class's state counts the steps tried; the two differ by the steps the
// device skipped, and to_host() makes them one again (before a checkpoint takes the state).
class DeviceStepCounts {
 public:
  // p's count, made from `host_step` the first time (or after forget()).
  const at::Tensor& of(const at::Tensor& p, int64_t host_step) {
    auto& count = counts_[p.unsafeGetTensorImpl()];
    if (!count.defined()) count = torch::full({}, static_cast<double>(host_step), p.options().dtype(torch::kFloat));
    return count;
  }
  // Sets `state`'s host counts to the device's: one read-back for all of them.
  template <typename ParamState>
  void to_host(torch::optim::Optimizer& optimizer) {
    if (counts_.empty()) return;
    std::vector<void*> keys;
    std::vector<at::Tensor> counts;
    for (const auto& [key, count] : counts_) {
      keys.push_back(key);
      counts.push_back(count);
    }
    const auto values = torch::stack(counts).to(torch::kCPU, torch::kDouble);
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto found = optimizer.state().find(keys[i]);
      if (found == optimizer.state().end()) continue;
      static_cast<ParamState&>(*found->second).step(static_cast<int64_t>(values[static_cast<int64_t>(i)].item<double>()));
    }
  }
  void forget() { counts_.clear(); }  // the host's counts were set anew (a checkpoint loaded)

 private:
  std::unordered_map<void*, at::Tensor> counts_;  // by parameter, as the base's state_
};

// Base's step() loops over the parameters a few tensor ops each; this one gathers the parameters
// with a gradient and updates them in one call, as torch/optim/adam.py's _fused_adam does, skipping
// on the device as that does with found_inf. The kernel's arithmetic is the base's: Adam adds
// weight_decay·p to the gradient, AdamW first scales p by 1 - lr·weight_decay; then
// m ← β1·m + (1-β1)·g, v ← β2·v + (1-β2)·g², p ← p - lr/(1-β1^t) · m / (√v/√(1-β2^t) + eps).
template <typename Base, typename Options, typename ParamState>
class FusedAdam final : public Base, public SkippableStep {
 public:
  FusedAdam(std::vector<torch::Tensor> params, const Options& options) : Base(std::move(params), options) {}

  torch::Tensor step(torch::optim::Optimizer::LossClosure closure = nullptr) override {
    torch::Tensor loss;
    if (closure != nullptr) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    step_unless({});
    return loss;
  }

  void step_unless(const at::Tensor& skip, const at::Tensor& lr = {}) override {
    torch::NoGradGuard no_grad;
    for (auto& group : this->param_groups_) update(group, skip, lr);
  }

  // The host's step counts set to the device's (before a checkpoint takes the state).
  void steps_to_host() { counts_.to_host<ParamState>(*this); }
  // The host's step counts were set anew (a checkpoint loaded): the device's follow them.
  void forget_device_steps() { counts_.forget(); }

 private:
  static constexpr bool kDecoupledWeightDecay = std::is_same_v<Base, torch::optim::AdamW>;

  void update(torch::optim::OptimizerParamGroup& group, const at::Tensor& skip, const at::Tensor& lr) {
    const auto& options = static_cast<const Options&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "the fused Adam does not support amsgrad");
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    std::vector<ParamState*> states;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "the fused Adam does not support sparse gradients");
      states.push_back(&state_of(p));
      params.push_back(p);
      grads.push_back(p.grad().contiguous());
      exp_avgs.push_back(states.back()->exp_avg());
      exp_avg_sqs.push_back(states.back()->exp_avg_sq());
    }
    if (params.empty()) return;
    // The host counts the steps tried, as adam.py does, only once every check above has passed; the
    // device's counts go up by one and back down where the step is skipped.
    for (size_t i = 0; i < params.size(); ++i) {
      steps.push_back(counts_.of(params[i], states[i]->step()));
      states[i]->step(states[i]->step() + 1);
    }
    at::_foreach_add_(steps, 1);
    const auto [beta1, beta2] = options.betas();
    const std::vector<torch::Tensor> no_max_exp_avg_sqs;  // amsgrad only
    const std::optional<at::Tensor> found_inf = skip.defined() ? std::optional<at::Tensor>(skip) : std::nullopt;
    const auto run = [&](const auto& rate) {
      if constexpr (kDecoupledWeightDecay) {
        at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, no_max_exp_avg_sqs, steps, rate, beta1, beta2,
                          options.weight_decay(), options.eps(), /*amsgrad=*/false, /*maximize=*/false,
                          /*grad_scale=*/std::nullopt, found_inf);
      } else {
        at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, no_max_exp_avg_sqs, steps, rate, beta1, beta2,
                         options.weight_decay(), options.eps(), /*amsgrad=*/false, /*maximize=*/false,
                         /*grad_scale=*/std::nullopt, found_inf);
      }
    };
    if (lr.defined()) {
      run(lr);
    } else {
      run(options.lr());
    }
    if (found_inf) at::_foreach_sub_(steps, std::vector<at::Tensor>(steps.size(), skip));
  }

  // The base class's state of p (created as the base creates it), so that save() and load() hold it.
  ParamState& state_of(const torch::Tensor& p) {
    auto& slot = this->state_[p.unsafeGetTensorImpl()];
    if (!slot) {
      auto state = std::make_unique<ParamState>();
      state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      slot = std::move(state);
    }
    auto& state = static_cast<ParamState&>(*slot);
    // The kernel walks p, its gradient and both moments as flat arrays of p's length.
    const auto fits = [&](const torch::Tensor& moment) {
      return moment.sizes() == p.sizes() && moment.dtype() == p.dtype() && moment.is_contiguous();
    };
    TORCH_CHECK(p.is_contiguous(), "the fused Adam needs contiguous parameters");
    TORCH_CHECK(fits(state.exp_avg()) && fits(state.exp_avg_sq()),
                "the optimizer state does not match its parameter of shape ", p.sizes());
    return state;
  }

  DeviceStepCounts counts_;
};

using FusedAdamL2 = FusedAdam<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState>;
using FusedAdamW = FusedAdam<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState>;

// Calls `f` with `optimizer` as the fused Adam or AdamW it is; nothing for another optimizer.
template <typename F>
void as_fused(torch::optim::Optimizer& optimizer, F f) {
  if (auto* adam = dynamic_cast<FusedAdamL2*>(&optimizer)) f(*adam);
  if (auto* adamw = dynamic_cast<FusedAdamW*>(&optimizer)) f(*adamw);
}

// Adam and AdamW keep the same state (step, exp_avg, exp_avg_sq) in two classes of their own.
template <typename State>
void put_state(torch::optim::Optimizer& optimizer, const torch::Tensor& p, const torch::Tensor& exp_avg,
               const torch::Tensor& exp_avg_sq, int64_t step) {
  auto state = std::make_unique<State>();
  state->step(step);
  state->exp_avg(exp_avg.to(p.device(), p.scalar_type()).contiguous().clone());
  state->exp_avg_sq(exp_avg_sq.to(p.device(), p.scalar_type()).contiguous().clone());
  optimizer.state()[p.unsafeGetTensorImpl()] = std::move(state);
}

// The state as plain tensors (CPU copies, the step an int64 scalar) when it is a `State`.
template <typename State>
bool take_state(const torch::optim::OptimizerParamState& state, const std::string& name,
                std::map<std::string, torch::Tensor>& tensors) {
  const auto* adam = dynamic_cast<const State*>(&state);
  if (adam == nullptr) return false;
  tensors["exp_avg/" + name] = adam->exp_avg().detach().cpu().clone();
  tensors["exp_avg_sq/" + name] = adam->exp_avg_sq().detach().cpu().clone();
  tensors["step/" + name] = torch::tensor(adam->step(), torch::kLong);
  return true;
}

}  // namespace

NamedParameters named_parameters(const torch::nn::Module& module) {
  NamedParameters out;
  for (const auto& p : module.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

std::map<std::string, torch::Tensor> optimizer_state(torch::optim::Optimizer& optimizer,
                                                     const NamedParameters& parameters) {
  as_fused(optimizer, [](auto& fused) { fused.steps_to_host(); });
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, p] : parameters) {
    const auto found = optimizer.state().find(p.unsafeGetTensorImpl());
    if (found == optimizer.state().end()) continue;
    const torch::optim::OptimizerParamState& state = *found->second;
    if (!take_state<torch::optim::AdamParamState>(state, name, tensors) &&
        !take_state<torch::optim::AdamWParamState>(state, name, tensors)) {
      throw std::logic_error("optimizer_state: not an Adam state");
    }
  }
  return tensors;
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedParameters& parameters,
                          const std::map<std::string, torch::Tensor>& tensors) {
  const bool decoupled = dynamic_cast<torch::optim::AdamW*>(&optimizer) != nullptr;
  for (const auto& [name, p] : parameters) {
    const auto step = tensors.find("step/" + name);
    if (step == tensors.end()) continue;  // no update yet reached this parameter
    const auto exp_avg = tensors.find("exp_avg/" + name), exp_avg_sq = tensors.find("exp_avg_sq/" + name);
    if (exp_avg == tensors.end() || exp_avg_sq == tensors.end()) {
      throw InputError("the optimizer state of " + name + " lacks its moments");
    }
    if (exp_avg->second.sizes() != p.sizes() || exp_avg_sq->second.sizes() != p.sizes() ||
        step->second.numel() != 1 || step->second.scalar_type() != torch::kLong) {
      throw InputError("the optimizer state of " + name + " does not fit the parameter");
    }
    const int64_t count = step->second.item<int64_t>();
    if (decoupled) {
      put_state<torch::optim::AdamWParamState>(optimizer, p, exp_avg->second, exp_avg_sq->second, count);
    } else {
      put_state<torch::optim::AdamParamState>(optimizer, p, exp_avg->second, exp_avg_sq->second, count);
    }
  }
  as_fused(optimizer, [](auto& fused) { fused.forget_device_steps(); });
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name, std::vector<torch::Tensor> params,
                                                        double lr, double beta1, double beta2, double eps,
                                                        double weight_decay) {
  const auto betas = std::make_tuple(beta1, beta2);
  if (name == "adam") {
    return std::make_unique<FusedAdamL2>(
        std::move(params), torch::optim::AdamOptions(lr).betas(betas).eps(eps).weight_decay(weight_decay));
  }
  if (name == "adamw") {
    return std::make_unique<FusedAdamW>(
        std::move(params), torch::optim::AdamWOptions(lr).betas(betas).eps(eps).weight_decay(weight_decay));
  }
  throw InputError("unknown optimizer '" + name + "': use adam or adamw");
}

}  // namespace trafo::train
