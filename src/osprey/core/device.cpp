#include "osprey/core/device.h"

#include <charconv>
#include <cstdlib>

#include "osprey/core/error.h"

namespace osprey {

Device Device::parse(std::string_view spec) {
  DeviceType type;
  std::string_view rest;
  if (spec.starts_with("cpu")) {
    type = DeviceType::cpu;
    rest = spec.substr(3);
  } else if (spec.starts_with("cuda")) {
    type = DeviceType::cuda;
    rest = spec.substr(4);
  } else {
    OSPREY_THROW(ValueError, "invalid device '{}'. Expected 'cpu', 'cpu:N' or 'cuda:N'", spec);
  }
  int index = 0;
  if (!rest.empty()) {
    OSPREY_CHECK(rest[0] == ':' && rest.size() > 1,
                 "invalid device '{}'. Expected 'cpu', 'cpu:N' or 'cuda:N'", spec);
    auto [p, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), index);
    OSPREY_CHECK(ec == std::errc() && p == rest.data() + rest.size() && index >= 0,
                 "invalid device '{}': the index must be a non-negative integer", spec);
  }
  return {type, index};
}

std::string Device::to_string() const {
  return std::string(type_ == DeviceType::cpu ? "cpu:" : "cuda:") + std::to_string(index_);
}

int num_cpu_devices() {
  static const int n = [] {
    const char* env = std::getenv("OSPREY_CPU_DEVICES");
    if (env == nullptr || *env == '\0') return 1;
    int v = 0;
    std::string_view s(env);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    OSPREY_CHECK(ec == std::errc() && p == s.data() + s.size() && v >= 1 && v <= 1024,
                 "OSPREY_CPU_DEVICES must be an integer in [1, 1024]. Received: '{}'", s);
    return v;
  }();
  return n;
}

std::vector<Device> list_devices() {
  std::vector<Device> out;
  for (int i = 0; i < num_cpu_devices(); ++i) out.push_back(Device::cpu(i));
  return out;
}

void check_device(Device d, const char* op) {
  if (d.type() == DeviceType::cuda) {
    OSPREY_THROW(NotImplementedError, "{}: device {} requested, but osprey was built without CUDA",
                 op, d.to_string());
  }
  OSPREY_CHECK(d.index() >= 0 && d.index() < num_cpu_devices(),
               "{}: device {} does not exist; this process has {} CPU device(s) "
               "(set OSPREY_CPU_DEVICES for more)",
               op, d.to_string(), num_cpu_devices());
}

}  // namespace osprey
