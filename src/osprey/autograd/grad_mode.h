// Grad mode: whether ops record a graph. It is per thread (a data-loader or evaluation thread
// never changes what the training thread records), on by default.
//   { NoGradGuard no_grad; auto y = model_forward(x); }  // inference: nothing is recorded
#pragma once

namespace osprey::autograd {

bool is_grad_enabled() noexcept;
void set_grad_enabled(bool enabled) noexcept;

// Turns recording off for its scope and restores the previous mode on exit (nests).
class NoGradGuard {
 public:
  NoGradGuard() noexcept : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Turns recording on for its scope (inside a NoGradGuard), restoring the previous mode on exit.
class EnableGradGuard {
 public:
  EnableGradGuard() noexcept : previous_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace osprey::autograd
