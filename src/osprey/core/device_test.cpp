// Device: parsing, printing, and the checks on devices this process does not have.
#include "osprey/core/device.h"

#include <gtest/gtest.h>

#include <string>

#include "osprey/core/error.h"

namespace osprey {
namespace {

TEST(DeviceTest, ParseReadsTypeAndIndex) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu(0));
  EXPECT_EQ(Device::parse("cpu:3"), Device::cpu(3));
  EXPECT_EQ(Device::parse("cuda:1"), Device(DeviceType::cuda, 1));
  EXPECT_EQ(Device::parse("cuda"), Device(DeviceType::cuda, 0));
  EXPECT_TRUE(Device::parse("cpu:2").is_cpu());
  EXPECT_FALSE(Device::parse("cuda:0").is_cpu());
}

TEST(DeviceTest, ToStringAlwaysPrintsTheIndexAndParsesBack) {
  EXPECT_EQ(Device::cpu().to_string(), "cpu:0");
  EXPECT_EQ(Device(DeviceType::cuda, 7).to_string(), "cuda:7");
  for (const Device d : {Device::cpu(0), Device::cpu(12), Device(DeviceType::cuda, 2)}) {
    EXPECT_EQ(Device::parse(d.to_string()), d);
  }
}

TEST(DeviceTest, ParseRejectsMalformedSpecsWithTheSpecInTheMessage) {
  const auto message_of = [](const char* spec) -> std::string {
    try {
      Device::parse(spec);
    } catch (const ValueError& e) {
      return e.what();
    }
    ADD_FAILURE() << "Device::parse accepted '" << spec << "'";
    return "";
  };
  EXPECT_EQ(message_of("gpu:0"), "invalid device 'gpu:0'. Expected 'cpu', 'cpu:N' or 'cuda:N'");
  EXPECT_EQ(message_of("cpu:"), "invalid device 'cpu:'. Expected 'cpu', 'cpu:N' or 'cuda:N'");
  EXPECT_EQ(message_of("cpu0"), "invalid device 'cpu0'. Expected 'cpu', 'cpu:N' or 'cuda:N'");
  EXPECT_EQ(message_of("cpu:-1"),
            "invalid device 'cpu:-1': the index must be a non-negative integer");
  EXPECT_EQ(message_of("cpu:1x"),
            "invalid device 'cpu:1x': the index must be a non-negative integer");
  EXPECT_EQ(message_of("cuda:99999999999"),
            "invalid device 'cuda:99999999999': the index must be a non-negative integer");
  EXPECT_THROW(Device::parse(""), ValueError);
  EXPECT_THROW(Device::parse("CPU"), ValueError);
}

TEST(DeviceTest, ListDevicesHasEveryVirtualCpuDeviceInOrder) {
  const std::vector<Device> devices = list_devices();
  ASSERT_EQ(static_cast<int>(devices.size()), num_cpu_devices());
  ASSERT_GE(num_cpu_devices(), 1);
  for (int i = 0; i < num_cpu_devices(); ++i) EXPECT_EQ(devices[i], Device::cpu(i));
}

TEST(DeviceTest, CheckDeviceRejectsMissingCpusAndCudaWithoutCuda) {
  EXPECT_NO_THROW(check_device(Device::cpu(0), "zeros"));
  try {
    check_device(Device::cpu(num_cpu_devices()), "zeros");
    FAIL() << "check_device accepted a CPU device past the last";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("zeros: device cpu:", 0), 0u) << msg;
    EXPECT_NE(msg.find("OSPREY_CPU_DEVICES"), std::string::npos) << msg;
  }
  EXPECT_THROW(check_device(Device(DeviceType::cuda, 0), "zeros"), NotImplementedError);
}

}  // namespace
}  // namespace osprey
