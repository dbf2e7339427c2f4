// The services under soak (issue 27): one server in a child process, --clients client threads in
// this one calling it as fast as they can for --seconds, on loopback. Every call's latency is
// kept; the server's resident memory (VmRSS from /proc) is sampled every --sample seconds. What
// it prints: calls/s, latency percentiles per call kind, and RSS over time with its growth after
// the warm-up, so a leak (RSS that keeps rising at a steady load) shows.
//   ps:     `osprey ps`'s PsServer holding the Fashion-MNIST MLP (535,818 float32, async SGD);
//           each client pulls every variable and pushes a gradient for each, as a worker's step.
//   oracle: a tuning chief's OracleServer over a RandomSearchOracle persisting to a folder; each
//           client runs trials of create + --updates reports + end. Every trial is kept (in
//           memory and on disk), so memory grows by what a trial holds: the figure to read is
//           the growth per trial, not a flat line.
//   bench_soak --service ps|oracle [--clients 8] [--seconds 600] [--sample 10] [--warmup 30]
// The server runs in a forked child so that its RSS is its own: the fork comes before this
// process starts any thread or gRPC.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/distribute/ps/internal/ps_client.h"
#include "osprey/distribute/ps/ps_server.h"
#include "osprey/distribute/ps/variable_sharding.h"
#include "osprey/tensor/factory.h"
#include "osprey/tune/oracle_service.h"
#include "osprey/tune/random_search.h"
#include "ps_bench_model.h"

namespace ps = osprey::distribute::ps;
namespace tune = osprey::tune;
using Clock = std::chrono::steady_clock;

namespace {

const auto& kMlp = osprey::bench::ps_mlp_variables();

tune::OracleOptions oracle_options() {
  tune::HyperParameters space;
  space.Float("x", 0.0, 1.0);
  space.Float("y", 0.0, 1.0);
  return {.objective = "val_loss", .max_trials = 0, .seed = 1, .hyperparameters = space};
}

// The child: serves until its stdin (the parent's pipe) closes, after writing its address.
[[noreturn]] void serve(const std::string& service, int address_fd, int stop_fd,
                        const std::filesystem::path& dir) {
  std::string address;
  std::unique_ptr<ps::PsServer> ps_server;
  std::unique_ptr<tune::RandomSearchOracle> chief;
  std::unique_ptr<tune::OracleServer> oracle_server;
  if (service == "ps") {
    ps_server = std::make_unique<ps::PsServer>(ps::PsServerOptions{.listen = "127.0.0.1:0"});
    address = ps_server->address();
  } else {
    chief = std::make_unique<tune::RandomSearchOracle>(oracle_options());
    chief->set_directory(dir);
    oracle_server = std::make_unique<tune::OracleServer>(
        *chief, tune::OracleServiceOptions{.lease_seconds = 600, .verbose = false});
    address = oracle_server->address();
  }
  address += '\n';
  if (::write(address_fd, address.data(), address.size()) < 0) ::_exit(3);
  ::close(address_fd);
  char c = 0;
  while (::read(stop_fd, &c, 1) > 0) {
  }
  if (ps_server) ps_server->shutdown();
  if (oracle_server) oracle_server->shutdown();
  ::_exit(0);
}

int64_t rss_kib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// Latencies of one call kind, in microseconds, gathered from every client.
struct Latencies {
  std::string kind;
  std::vector<float> us;
};

double percentile(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

float micros_since(Clock::time_point t) {
  return std::chrono::duration<float, std::micro>(Clock::now() - t).count();
}

// One client's loop for the service; appends to lat[kind index] until stop.
// Client 0 registers the model with the ps and sets `registered`; the others wait for it.
void run_client(const std::string& service, const std::string& address, int index, int updates,
                const std::atomic<bool>& stop, std::atomic<bool>& registered,
                std::vector<Latencies>& lat) {
  if (service == "ps") {
    ps::NamedTensors values;
    for (const auto& [name, shape] : kMlp)
      values.emplace_back(name, osprey::random_normal(shape, {.seed = 1}));
    ps::PsClient client({.addresses = {address}});
    std::vector<osprey::autograd::Variable> vars;
    for (size_t i = 0; i < values.size(); ++i) {
      osprey::autograd::Variable var(values[i].second.clone(), true, values[i].first);
      // Tiny gradients: the weights stay finite over millions of updates.
      var.set_grad(osprey::random_normal(values[i].second.shape(),
                                         {.seed = static_cast<uint64_t>(2 + i), .stddev = 1e-6}));
      vars.push_back(var);
    }
    client.bind(ps::plan_sharding(kMlp, 1), vars, {});
    if (index == 0) {
      client.register_model(osprey::bench::ps_async_sgd_config(), true);
      registered = true;
    }
    while (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    while (!stop) {
      auto t = Clock::now();
      const std::vector<int64_t> versions = client.pull();
      lat[0].us.push_back(micros_since(t));
      t = Clock::now();
      client.push({.base_versions = versions, .weight = 32});
      lat[1].us.push_back(micros_since(t));
    }
    return;
  }
  auto w = tune::connect_oracle(std::make_unique<tune::RandomSearchOracle>(oracle_options()),
                                {.address = address, .tuner_id = fmt::format("tuner{}", index)});
  while (!stop) {
    auto t = Clock::now();
    const tune::Trial trial = w->create_trial("");
    lat[0].us.push_back(micros_since(t));
    for (int e = 0; e < updates && !stop; ++e) {
      t = Clock::now();
      w->update_trial(trial.trial_id, {{"val_loss", 1.0 / (e + 1)}, {"loss", 0.5}}, e);
      lat[1].us.push_back(micros_since(t));
    }
    t = Clock::now();
    w->end_trial(trial.trial_id, tune::TrialStatus::completed, "");
    lat[2].us.push_back(micros_since(t));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"services under soak: calls/s, latency percentiles and the server's RSS"};
  std::string service = "ps";
  int clients = 8;
  double seconds = 600;
  double sample = 10;
  double warmup = 30;
  int updates = 10;
  app.add_option("--service", service, "ps or oracle")->check(CLI::IsMember({"ps", "oracle"}));
  app.add_option("--clients", clients, "Client threads")->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "Length of the soak")->check(CLI::PositiveNumber);
  app.add_option("--sample", sample, "Seconds between RSS samples")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Seconds before the RSS baseline")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--updates", updates, "oracle: reports per trial")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("osprey_soak_{}", ::getpid());
  std::filesystem::remove_all(dir);
  int address_pipe[2];
  int stop_pipe[2];
  if (::pipe(address_pipe) != 0 || ::pipe(stop_pipe) != 0) return 1;
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    ::close(address_pipe[0]);
    ::close(stop_pipe[1]);
    serve(service, address_pipe[1], stop_pipe[0], dir);
  }
  ::close(address_pipe[1]);
  ::close(stop_pipe[0]);
  std::string address;
  char c = 0;
  while (::read(address_pipe[0], &c, 1) == 1 && c != '\n') address += c;
  ::close(address_pipe[0]);
  if (address.empty()) {
    fmt::print(stderr, "bench_soak: the server did not start\n");
    return 1;
  }

  const std::vector<std::string> kinds = service == "ps"
                                             ? std::vector<std::string>{"pull", "push"}
                                             : std::vector<std::string>{"create", "update", "end"};
  std::vector<std::vector<Latencies>> per_client(static_cast<size_t>(clients));
  for (auto& l : per_client) {
    for (const auto& k : kinds) l.push_back({k, {}});
  }
  std::atomic<bool> stop{false};
  std::atomic<bool> registered{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  const auto start = Clock::now();
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      run_client(service, address, i, updates, stop, registered,
                 per_client[static_cast<size_t>(i)]);
    });
  }
  fmt::print("{}: {} clients for {} s on loopback (server pid {})\n", service, clients, seconds,
             child);
  fmt::print("{:>8} {:>10} {:>10}\n", "t (s)", "RSS (MiB)", "calls");
  int64_t baseline = -1;
  double baseline_t = 0;
  int64_t last = 0;
  auto count_calls = [&] {
    // Racy reads of sizes while clients append: a progress figure only.
    int64_t n = 0;
    for (const auto& l : per_client) {
      for (const auto& k : l) n += static_cast<int64_t>(k.us.size());
    }
    return n;
  };
  for (double t = sample; t <= seconds + 1e-9; t += sample) {
    std::this_thread::sleep_until(start + std::chrono::duration<double>(t));
    last = rss_kib(child);
    if (baseline < 0 && t >= warmup) {
      baseline = last;
      baseline_t = t;
    }
    fmt::print("{:>8.0f} {:>10.1f} {:>10}\n", t, static_cast<double>(last) / 1024.0, count_calls());
    std::fflush(stdout);
  }
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(stop_pipe[1]);
  int status = 0;
  ::waitpid(child, &status, 0);

  int64_t calls = 0;
  fmt::print("{:>8} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "call", "count", "p50 (ms)", "p99 (ms)",
             "p99.9 (ms)", "max (ms)");
  for (size_t k = 0; k < kinds.size(); ++k) {
    std::vector<float> all;
    for (auto& l : per_client) all.insert(all.end(), l[k].us.begin(), l[k].us.end());
    calls += static_cast<int64_t>(all.size());
    const double mx = all.empty() ? 0.0 : *std::max_element(all.begin(), all.end());
    fmt::print("{:>8} {:>10} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}\n", kinds[k], all.size(),
               percentile(all, 0.5) / 1e3, percentile(all, 0.99) / 1e3,
               percentile(all, 0.999) / 1e3, mx / 1e3);
  }
  fmt::print("{} calls in {:.0f} s: {:.0f} calls/s\n", calls, elapsed,
             static_cast<double>(calls) / elapsed);
  if (baseline > 0) {
    const double growth = static_cast<double>(last - baseline) / 1024.0;
    fmt::print(
        "server RSS: {:.1f} MiB at {:.0f} s, {:.1f} MiB at the end: {:+.1f} MiB ({:+.3f} "
        "MiB/min)\n",
        static_cast<double>(baseline) / 1024.0, baseline_t, static_cast<double>(last) / 1024.0,
        growth, growth / std::max(1e-9, (seconds - baseline_t) / 60.0));
  }
  if (service == "oracle") {
    int64_t trials = 0;
    for (const auto& l : per_client) trials += static_cast<int64_t>(l[0].us.size());
    fmt::print("trials created: {}\n", trials);
  }
  std::filesystem::remove_all(dir);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
