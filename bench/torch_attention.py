#!/usr/bin/env python3
"""PyTorch's side of bench_attention: forward + backward of softmax(q k^T / sqrt(d) [+ causal]) v
in float32 at one shape, best of --reps, as one JSON line. PyTorch 1.13 (Debian) has no fused
scaled_dot_product_attention, so this is the materialized formula nn.MultiheadAttention runs.
  python3 bench/torch_attention.py [--batch 1] [--heads 4] [--t 1024] [--d 64] [--causal]
                                   [--threads 2] [--reps 5]
"""
import argparse
import json
import math
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--heads", type=int, default=4)
ap.add_argument("--t", type=int, default=1024)
ap.add_argument("--d", type=int, default=64)
ap.add_argument("--causal", action="store_true")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--reps", type=int, default=5)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
shape = (a.batch, a.heads, a.t, a.d)
q, k, v, g = (torch.randn(shape) for _ in range(4))
bias = torch.zeros(a.t, a.t).masked_fill(~torch.ones(a.t, a.t, dtype=torch.bool).tril(),
                                         -math.inf) if a.causal else None


def step():
    qq, kk, vv = (x.clone().requires_grad_() for x in (q, k, v))
    s = qq @ kk.transpose(-1, -2) / math.sqrt(a.d)
    if bias is not None:
        s = s + bias
    ((torch.softmax(s, -1) @ vv) * g).sum().backward()


step()
best = 1e30
for _ in range(a.reps):
    t0 = time.perf_counter()
    step()
    best = min(best, time.perf_counter() - t0)
print(json.dumps({"framework": "torch " + torch.__version__, "batch": a.batch, "heads": a.heads,
                  "t": a.t, "d": a.d, "causal": a.causal, "threads": a.threads,
                  "ms": round(1e3 * best, 2)}))
