// Device: where a tensor lives. `cpu:0..N-1` are virtual CPU devices (N from OSPREY_CPU_DEVICES,
// default 1), like JAX's forced host device count, so every distribution path runs on one
// machine; `cuda:i` is reserved for the CUDA backend and parses already, so callers never change.
//   Device d = Device::parse("cpu:1");  d.to_string() == "cpu:1"
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace osprey {

enum class DeviceType : uint8_t { cpu, cuda };

class Device {
 public:
  constexpr Device() = default;
  constexpr Device(DeviceType type, int index) : type_(type), index_(index) {}
  static constexpr Device cpu(int index = 0) { return {DeviceType::cpu, index}; }
  // "cpu", "cpu:3", "cuda:0"; throws ValueError for anything else.
  static Device parse(std::string_view spec);

  constexpr DeviceType type() const noexcept { return type_; }
  constexpr int index() const noexcept { return index_; }
  constexpr bool is_cpu() const noexcept { return type_ == DeviceType::cpu; }
  std::string to_string() const;
  constexpr bool operator==(const Device&) const = default;

 private:
  DeviceType type_ = DeviceType::cpu;
  int index_ = 0;
};

// Number of virtual CPU devices: OSPREY_CPU_DEVICES, default 1; read once.
int num_cpu_devices();
// Every device this process can use, cpu:0 first.
std::vector<Device> list_devices();
// Throws ValueError when the device does not exist in this process (op names the caller).
void check_device(Device d, const char* op);

}  // namespace osprey
