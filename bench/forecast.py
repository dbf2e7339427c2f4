#!/usr/bin/env python3
"""Scaling forecast for ring all-reduce data parallelism (issue 19).

From two measurements on this machine:
  - the compute time of one training step on one worker (bench/weak_scaling.sh, 1 worker), and
  - the all-reduce curve between 2 processes (bench_mpi_allreduce's table, raw MPI column),
fit the ring model t_allreduce(W, S) = 2 (W - 1) alpha + 2 (W - 1) / W * S / B (alpha: per-hop
latency, B: link bandwidth; at W = 2 this is 2 alpha + S / B, a straight line in S), then
predict the step time at W workers without overlap (compute + all-reduce) and with perfect
overlap (the larger of the two), and the weak-scaling efficiency compute / step time.
  bench/forecast.py --table allreduce.txt --compute-ms 2.1 --grad-bytes 2143272 [--measured-2-ms 3.0]
"""
import argparse
import re


def fit_line(points):
    """Least squares t = a + b * s."""
    n = len(points)
    ms = sum(s for s, _ in points) / n
    mt = sum(t for _, t in points) / n
    b = sum((s - ms) * (t - mt) for s, t in points) / sum((s - ms) ** 2 for s, _ in points)
    return mt - b * ms, b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--table", required=True, help="bench_mpi_allreduce output")
    p.add_argument("--compute-ms", type=float, required=True, help="one worker's step time")
    p.add_argument("--grad-bytes", type=int, required=True, help="gradient bytes all-reduced per step")
    p.add_argument("--measured-2-ms", type=float, help="measured step time with 2 workers, to check the model")
    p.add_argument("--column", type=int, default=1, help="which time column of the table (1: raw MPI)")
    p.add_argument("--bandwidth-gbs", type=float, help="a link's bandwidth in GB/s instead of the table's")
    a = p.parse_args()
    points = []
    for line in open(a.table):
        f = line.split()
        if len(f) > a.column and re.fullmatch(r"\d+", f[0]) and re.fullmatch(r"[0-9.]+", f[a.column]):
            points.append((float(f[0]), float(f[a.column]) * 1e-6))
    # Latency from the smallest message (t = 2 alpha at W = 2); bandwidth from the slope between
    # 256 KiB and 16 MiB (above, this machine's page faults bend the curve, not the link).
    points.sort()
    alpha = points[0][1] / 2
    _, slope = fit_line([(s, t) for s, t in points if (256 << 10) <= s <= (16 << 20)])
    bandwidth = 1.0 / slope
    if a.bandwidth_gbs:
        bandwidth = a.bandwidth_gbs * 1e9
    print(f"fit at W=2: alpha {alpha * 1e6:.1f} us per hop, bandwidth {bandwidth / 1e9:.2f} GB/s")
    c = a.compute_ms * 1e-3
    print(f"{'workers':>8} {'all-reduce ms':>14} {'step ms (no overlap)':>21} {'step ms (overlap)':>18} "
          f"{'efficiency':>11}")
    for w in [1, 2, 4, 8, 16, 32, 64]:
        ar = 0.0 if w == 1 else 2 * (w - 1) * alpha + 2 * (w - 1) / w * a.grad_bytes / bandwidth
        serial, overlap = c + ar, max(c, ar)
        print(f"{w:>8} {ar * 1e3:>14.3f} {serial * 1e3:>21.3f} {overlap * 1e3:>18.3f} "
              f"{c / serial:>5.2f}-{c / overlap:.2f}")
    if a.measured_2_ms:
        ar2 = 2 * alpha + a.grad_bytes / bandwidth
        print(f"check at W=2: measured {a.measured_2_ms:.3f} ms against predicted "
              f"{max(c, ar2) * 1e3:.3f}-{(c + ar2) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
