#include "osprey/autograd/grad_mode.h"

namespace osprey::autograd {

namespace {
thread_local bool grad_enabled = true;
}

bool is_grad_enabled() noexcept { return grad_enabled; }
void set_grad_enabled(bool enabled) noexcept { grad_enabled = enabled; }

}  // namespace osprey::autograd
