#!/usr/bin/python3
"""PyTorch's side of the main job's table (bench/RESULTS.md, `osprey run`): what a PyTorch user
gets from the same small CNN trained for the same wall-clock time on the same rows.

The network is HyperCNN's default (tune/hyper_cnn.h): RandomFlip (horizontal, training only) ->
Conv 32 3x3 same relu -> MaxPool 2 -> Dropout 0.1 -> Conv 64 3x3 same relu -> MaxPool 2 ->
Dropout 0.1 -> Flatten -> Dense 128 relu -> Dropout 0.2 -> Dense 10, Adam 1e-3 (Keras's eps 1e-7)
with a cosine-decayed learning rate planned to end at the last checkpoint, batch 128, on the
55,000 rows `osprey run` retrains on (the first 50,000 training images plus its 5,000 validation
images). It reports test accuracy at each checkpoint (seconds of training since the start, as
`osprey run`'s stages end), one JSON line per checkpoint.

  torch_budget_cnn.py --checkpoints 270,720,837,900 [--threads 2] [--seed 1] [--data DIR]
                      [--policy float32|mixed_bfloat16]
"""
import argparse
import contextlib
import json
import math
import os
import time

import torch
from torch import nn

from torch_train import load


def build():
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.1),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.1),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 10))
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def accuracy(model, x, y, autocast):
    model.eval()
    right = 0
    with torch.no_grad(), autocast():
        for i in range(0, len(x), 1024):
            right += (model(x[i:i + 1024].unsqueeze(1)).argmax(1) == y[i:i + 1024]).sum().item()
    model.train()
    return right / len(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoints", required=True, help="seconds, comma-separated, increasing")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--policy", default="float32", choices=["float32", "mixed_bfloat16"])
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    checkpoints = [float(s) for s in a.checkpoints.split(",")]
    (x_all, y_all), (x_test, y_test) = load(a.data)
    x, y = x_all[:55000], y_all[:55000]
    autocast = ((lambda: torch.autocast("cpu", dtype=torch.bfloat16))
                if a.policy == "mixed_bfloat16" else contextlib.nullcontext)
    model = build()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    batch = 128
    start = time.monotonic()
    total = checkpoints[-1]
    done = 0
    while done < len(checkpoints):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), batch):
            elapsed = time.monotonic() - start
            # Cosine decay over the whole time budget (osprey decays over its planned steps).
            for g in opt.param_groups:
                g["lr"] = 1e-3 * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * min(1.0, elapsed / total))))
            idx = perm[i:i + batch]
            xb = x[idx]
            flip = torch.rand(len(idx)) < 0.5
            xb = torch.where(flip[:, None, None], xb.flip(2), xb).unsqueeze(1)
            with autocast():
                loss = loss_fn(model(xb), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            while done < len(checkpoints) and time.monotonic() - start >= checkpoints[done]:
                print(json.dumps({"seconds": checkpoints[done], "policy": a.policy,
                                  "test_accuracy": accuracy(model, x_test, y_test, autocast)}),
                      flush=True)
                done += 1
            if done == len(checkpoints):
                break


if __name__ == "__main__":
    main()
