// The device list a strategy is given: "cpu:0", "cpu:1", ... (virtual CPU devices: each one is a
// replica worker thread). Empty means every local device (core's list_devices(), whose count is
// OSPREY_CPU_DEVICES).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "osprey/core/device.h"

namespace osprey::distribute {

// Parsed devices; ValueError naming `who` and the entry for an unparsable or repeated device.
std::vector<Device> resolve_devices(const std::vector<std::string>& devices, std::string_view who);
// "cpu:0", "cpu:1", ... for n virtual devices (n >= 1).
std::vector<std::string> virtual_devices(int n);

}  // namespace osprey::distribute
