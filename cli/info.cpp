// `osprey info`: what this build and machine offer: version, devices, threads, the ISA oneDNN
// dispatches to (and the cap, OSPREY_MAX_CPU_ISA), whether bf16/int8 kernels are native, and this
// process's place in the cluster.
#include <fmt/format.h>

#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "osprey/core/cpu_isa.h"
#include "osprey/core/device.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/cluster/cluster_resolver.h"
#include "osprey/tensor/backend.h"
#include "osprey/tensor/cpu/dnnl_info.h"
#include "osprey/version.h"

namespace osprey::cli {

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the version, devices and kernel capabilities");
  cmd->callback([] {
    fmt::print("osprey {}\n", kVersion);
    std::string devices;
    for (const Device& d : list_devices()) devices += (devices.empty() ? "" : ", ") + d.to_string();
    fmt::print("devices: {} (set OSPREY_CPU_DEVICES for more virtual CPU devices)\n", devices);
    fmt::print("threads: {}\n", num_threads());
    fmt::print("kernels: {} backend, oneDNN {}\n", backend_for(Device::cpu(0)).name,
               cpu::dnnl_version_string());
    fmt::print("CPU ISA: {}\n", describe_cpu_isa());
    fmt::print("oneDNN ISA: {}\n", cpu::dnnl_isa_name());
    fmt::print("bf16 kernels: {}\n", cpu::native_bf16()
                                         ? "native (AVX512_BF16)"
                                         : "emulated (no AVX512_BF16): float32 kernels with "
                                           "bfloat16 storage, no faster than float32");
    fmt::print("int8 kernels: {}\n",
               cpu::native_int8() ? "native (VNNI)"
                                  : "u8 x s8 without VNNI: exact; inputs with negative values "
                                    "run twice");
    // Last, so a malformed OSPREY_CONFIG/TF_CONFIG still lets the rest print; it is a usage
    // error (exit code 2): the command's environment is its input.
    try {
      fmt::print("cluster: {}\n", distribute::ClusterResolver::from_environment().describe());
    } catch (const ValueError& e) {
      fmt::print("cluster: invalid: {}\n", e.what());
      throw UsageError(e.what());
    }
  });
}

}  // namespace osprey::cli
