#include "osprey/distribute/devices.h"

#include <algorithm>

#include "osprey/core/error.h"

namespace osprey::distribute {

std::vector<Device> resolve_devices(const std::vector<std::string>& devices, std::string_view who) {
  if (devices.empty()) return list_devices();
  std::vector<Device> out;
  for (const std::string& name : devices) {
    Device d = Device::cpu(0);
    try {
      d = Device::parse(name);
    } catch (const ValueError& e) {
      OSPREY_THROW(ValueError, "{}: cannot use device \"{}\": {}", who, name, e.what());
    }
    OSPREY_CHECK(std::find(out.begin(), out.end(), d) == out.end(),
                 "{}: device \"{}\" is listed twice", who, name);
    out.push_back(d);
  }
  return out;
}

std::vector<std::string> virtual_devices(int n) {
  OSPREY_CHECK(n >= 1, "virtual_devices: n must be at least 1. Received: {}", n);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("cpu:" + std::to_string(i));
  return out;
}

}  // namespace osprey::distribute
