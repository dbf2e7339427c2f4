#include <osprey/osprey.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
namespace os = osprey;

int main() {
  os::set_global_seed(1);
  const os::Tensor x = os::random_normal({2048, 64}, {.seed = 1});
  const os::Tensor y = os::random_uniform({2048, 1}, {.seed = 2});
  auto model = os::Sequential(
      {os::layers::Dense(256, "relu"), os::layers::Dense(256, "relu"), os::layers::Dense(1)},
      {.input_shape = {64}});
  model.compile("adam", "mse");

  // Steps 10 to 19 (counted from 0 across epochs): past the first steps, which create oneDNN
  // primitives and fill the allocator's cache. The trace and the summary are written when step
  // 19 ends.
  model.fit(x, y,
            {.batch_size = 64,
             .epochs = 1,
             .verbose = 0,
             .callbacks = {os::callbacks::Profiler("profile", {.steps = {10, 19}})}});

  std::ifstream in("profile/summary.txt");
  std::stringstream summary;
  summary << in.rdbuf();
  std::printf("%s", summary.str().c_str());
  // profile/trace.json opens in https://ui.perfetto.dev or chrome://tracing.
  if (summary.str().find("linear") != std::string::npos) {
    std::printf("the profile shows the dense layers' linear ops\n");
  }
}
