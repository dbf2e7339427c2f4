// osprey's Gloo communicator against Gloo's own ring all-reduce called directly, on the same
// buffers, between 2 processes on loopback (issue 19):
//   ./build/bench/bench_gloo_allreduce [--reps 20] [--rounds 5]
// The program forks its second rank. Raw Gloo gets its own context (FileStore rendezvous, TCP
// device on 127.0.0.1); osprey's side is a GlooGroup (its TCP rendezvous store), with and
// without the per-call descriptor check. Sides alternate in rounds; rank 0 prints the median
// per-call time and the ratios.
#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <vector>

#include "osprey/comm/gloo.h"
#include "osprey/comm/tcp_store.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"osprey's Gloo communicator against raw Gloo"};
  int reps = 20, rounds = 5;
  app.add_option("--reps", reps);
  app.add_option("--rounds", rounds);
  CLI11_PARSE(app, argc, argv);
  namespace oc = osprey::comm;
  int port = 0;
  {
    oc::TcpStoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }
  const std::string dir = fmt::format("/tmp/osprey_gloo_bench_{}", getpid());
  std::filesystem::create_directories(dir);
  const pid_t child = fork();
  const int rank = child == 0 ? 1 : 0;

  gloo::rendezvous::FileStore store(dir);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto raw = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  raw->connectFullMesh(store, device);

  oc::GlooGroup group({.rank = rank,
                       .size = 2,
                       .rendezvous = fmt::format("127.0.0.1:{}", port),
                       .hostname = "",
                       .timeout = std::chrono::minutes(1),
                       .check_calls = true});
  auto checked = group.make_communicator("checked");
  auto unchecked = group.make_communicator("unchecked", false);
  // Each timed round starts together: a raw barrier-like all-reduce of one float first.
  float token = 0;
  auto sync = [&] {
    gloo::AllreduceOptions o(raw);
    o.setOutput(&token, 1);
    o.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(o);
  };
  auto time_calls = [&](int r, const std::function<void()>& fn) {
    sync();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < r; ++i) fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / r;
  };
  if (rank == 0) {
    fmt::print("2 processes on loopback; median us per call over {} rounds\n", rounds);
    fmt::print("{:>10} {:>10} {:>10} {:>10} {:>9} {:>9}\n", "bytes", "raw Gloo", "osprey",
               "unchecked", "osp/raw", "unch/raw");
  }
  for (int64_t bytes = 4 << 10; bytes <= 16 << 20; bytes *= 4) {
    const size_t n = static_cast<size_t>(bytes / 4);
    std::vector<float> a(n, 1.0f), b(n, 1.0f), c(n, 1.0f);
    const int r = bytes >= (1 << 20) ? std::max(3, reps / 4) : reps;
    std::vector<double> tr, to, tu;
    for (int round = 0; round <= rounds; ++round) {
      const double x = time_calls(r, [&] {
        gloo::AllreduceOptions o(raw);
        o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        o.setOutput(a.data(), n);
        o.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
        gloo::allreduce(o);
      });
      const double y = time_calls(
          r, [&] { checked->all_reduce(b.data(), static_cast<int64_t>(n), oc::ReduceOp::sum); });
      const double z = time_calls(
          r, [&] { unchecked->all_reduce(c.data(), static_cast<int64_t>(n), oc::ReduceOp::sum); });
      std::fill(a.begin(), a.end(), 1.0f);
      std::fill(b.begin(), b.end(), 1.0f);
      std::fill(c.begin(), c.end(), 1.0f);
      if (round == 0) continue;
      tr.push_back(x);
      to.push_back(y);
      tu.push_back(z);
    }
    if (rank == 0) {
      const double mr = median(tr), mo = median(to), mu = median(tu);
      fmt::print("{:>10} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.3f} {:>9.3f}\n", bytes, mr * 1e6,
                 mo * 1e6, mu * 1e6, mo / mr, mu / mr);
    }
  }
  checked.reset();
  unchecked.reset();
  if (child != 0) {
    waitpid(child, nullptr, 0);
    std::filesystem::remove_all(dir);
  }
  return 0;
}
