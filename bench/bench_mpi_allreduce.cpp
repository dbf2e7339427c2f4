// osprey's cross-process all-reduce against raw MPI_Allreduce on the same buffers (issue 19):
//   mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1
//     ./build/bench/bench_mpi_allreduce [--reps 30] [--rounds 5]       (one command line)
// For each size (4 KiB to 64 MiB of float32) the four sides are timed in alternating rounds in
// the same run, each round starting with the next side, so load from elsewhere hits them alike: raw
// MPI_Allreduce (sum) on a dup of MPI_COMM_WORLD; osprey's MPI communicator all_reduce (sum), with
// its per-call descriptor check (the default) and without it; and osprey's bf16 all-reduce (half
// the bytes on the wire, f32 accumulation). Rank 0 prints the median per-call time of each side and
// osprey/raw. Not Google Benchmark: every rank must run exactly the same iterations, which its
// adaptive iteration counts do not guarantee.
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "osprey/comm/mpi.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of fn, over reps calls, started together on every rank.
double time_calls(int reps, const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) fn();
  const double local =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
  double slowest = 0.0;  // the collective is as fast as its slowest rank
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"osprey all-reduce against raw MPI_Allreduce"};
  int reps = 30, rounds = 5;
  app.add_option("--reps", reps, "Calls per timed round (fewer above 1 MiB: at least 5)");
  app.add_option("--rounds", rounds, "Alternating rounds per side (the median is reported)");
  CLI11_PARSE(app, argc, argv);

  auto checked = osprey::comm::make_mpi_communicator();  // initializes MPI
  auto unchecked = osprey::comm::make_mpi_communicator({.check_calls = false});
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  const int rank = checked->rank(), size = checked->size();
  if (rank == 0) {
    fmt::print("{} ranks; median us per call over {} rounds\n", size, rounds);
    fmt::print("{:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}\n", "bytes", "raw MPI",
               "osprey", "unchecked", "bf16", "osp/raw", "unch/raw", "bf16/raw");
  }
  for (int64_t bytes = 4 << 10; bytes <= 64 << 20; bytes *= 4) {
    const int64_t n = bytes / 4;
    std::vector<float> a(static_cast<size_t>(n), 1.0f), b(a), c(a), d(a);
    const int r = bytes >= (1 << 20) ? std::max(5, reps / 6) : reps;
    std::vector<double> t_raw, t_osp, t_unch, t_bf16;
    const std::vector<std::function<void()>> sides = {
        [&] {
          t_raw.push_back(time_calls(r, [&] {
            MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, raw);
          }));
        },
        [&] {
          t_osp.push_back(time_calls(
              r, [&] { checked->all_reduce(b.data(), n, osprey::comm::ReduceOp::sum); }));
        },
        [&] {
          t_unch.push_back(time_calls(
              r, [&] { unchecked->all_reduce(c.data(), n, osprey::comm::ReduceOp::sum); }));
        },
        [&] {
          t_bf16.push_back(time_calls(
              r, [&] { checked->all_reduce_bf16(d.data(), n, osprey::comm::ReduceOp::sum); }));
        }};
    for (int round = 0; round <= rounds; ++round) {  // round 0 warms up (page faults, connections)
      // Each round starts with another side, so no side always follows the same one (or the
      // reset below, which leaves the last arrays it touched in cache).
      for (size_t k = 0; k < sides.size(); ++k) sides[(k + static_cast<size_t>(round)) % 4]();
      if (round == 0) {
        t_raw.clear();
        t_osp.clear();
        t_unch.clear();
        t_bf16.clear();
      }
      // Keep the values bounded (repeated sums of ones grow): reset between rounds.
      std::fill(a.begin(), a.end(), 1.0f);
      std::fill(b.begin(), b.end(), 1.0f);
      std::fill(c.begin(), c.end(), 1.0f);
      std::fill(d.begin(), d.end(), 1.0f);
    }
    const double mr = median(t_raw), mo = median(t_osp), mu = median(t_unch), mb = median(t_bf16);
    if (rank == 0) {
      fmt::print("{:>10} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.3f} {:>9.3f} {:>9.3f}\n",
                 bytes, mr * 1e6, mo * 1e6, mu * 1e6, mb * 1e6, mo / mr, mu / mr, mb / mr);
    }
  }
  MPI_Comm_free(&raw);
  return 0;
}
