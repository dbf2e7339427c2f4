// Fits y = 3x - 2 with plain autograd and gradient descent: the smallest complete use of
// osprey's tensors, Variables and backward(). Prints the learned slope and intercept.
#include <fmt/format.h>
#include <osprey/osprey.h>

namespace os = osprey;
namespace ag = osprey::autograd;

int main() {
  const os::Tensor x = os::random_uniform({256, 1}, {.seed = 1, .low = -1.0, .high = 1.0});
  const os::Tensor noise = os::random_normal({256, 1}, {.seed = 2, .stddev = 0.01});
  const os::Tensor y = os::add(os::add(os::mul(x, 3.0), -2.0), noise);

  ag::Variable w(os::zeros({1, 1}), true, "w");
  ag::Variable b(os::zeros({1}), true, "b");
  for (int step = 0; step < 300; ++step) {
    ag::Variable pred = ag::linear(ag::Variable(x), w, b);
    ag::Variable loss = ag::mean(ag::square(pred - ag::Variable(y)));
    w.zero_grad();
    b.zero_grad();
    loss.backward();
    w.set_value(os::sub(w.value(), os::mul(w.grad(), 0.1)));
    b.set_value(os::sub(b.value(), os::mul(b.grad(), 0.1)));
  }
  fmt::print("slope {:.3f} intercept {:.3f}\n", w.value().item(), b.value().item());
  return std::abs(w.value().item() - 3.0) < 0.05 && std::abs(b.value().item() + 2.0) < 0.05 ? 0 : 1;
}
