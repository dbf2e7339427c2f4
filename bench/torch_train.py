#!/usr/bin/python3
"""PyTorch side of bench/compare_torch: the same Fashion-MNIST models, data and protocol as
bench_train.cpp (Keras defaults where PyTorch's differ: glorot-uniform kernels, zero biases,
Adam eps 1e-7), printing one JSON line.

  torch_train.py --model mlp|cnn --mode train|predict|accuracy [--samples N] [--epochs N]
                 [--batch-size N] [--seed N] [--threads N] [--data DIR] [--policy NAME]

--policy mixed_bfloat16 runs forward and loss under torch.autocast("cpu", torch.bfloat16)
(PyTorch's CPU mixed precision: float32 parameters, bfloat16 matmuls and convolutions).
Training also reports "activation_mib": the bytes of the tensors autograd saves for backward
in one batch (saved-tensor hooks; parameters themselves excluded, their bfloat16 copies counted).
"""
import contextlib
import argparse
import gzip
import json
import os
import resource
import struct
import time

import numpy as np
import torch
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(directory):
    def split(prefix):
        x = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"))
        return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))

    return split("train"), split("t10k")


class ChannelsFirst(nn.Module):
    """[N, 28, 28] -> [N, 1, 28, 28]: PyTorch's convolutions want NCHW."""

    def forward(self, x):
        return x.unsqueeze(1)


def build(kind):
    if kind == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                              nn.ReLU(), nn.Linear(256, 10))
    else:
        model = nn.Sequential(ChannelsFirst(), nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def autocast(policy):
    if policy == "mixed_bfloat16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def activation_mib(model, x, y, policy):
    params = {p.data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()
        if ptr not in params:
            saved[ptr] = t.element_size() * t.nelement()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with autocast(policy):
            loss = nn.CrossEntropyLoss()(model(x), y)
    del loss
    return sum(saved.values()) / (1024.0 * 1024.0)


def train_epochs(model, opt, x, y, batch, epochs, gen, policy="float32"):
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    n = x.shape[0]
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, batch):
            idx = perm[start : start + batch]
            opt.zero_grad(set_to_none=True)
            with autocast(policy):
                loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()


def predict(model, x, batch):
    model.eval()
    out = []
    with torch.inference_mode():
        for start in range(0, x.shape[0], batch):
            out.append(model(x[start : start + batch]))
    return torch.cat(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--mode", default="train", choices=["train", "predict", "accuracy"])
    p.add_argument("--samples", type=int, default=60000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--policy", default="float32", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--data", default=os.environ.get("OSPREY_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    (xtr, ytr), (xte, yte) = load(a.data)
    model = build(a.model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    result = {"framework": "pytorch " + torch.__version__, "model": a.model, "mode": a.mode, "policy": a.policy}

    if a.mode == "train":
        x, y = xtr[: a.samples], ytr[: a.samples]
        train_epochs(model, opt, x[: 20 * a.batch_size], y[: 20 * a.batch_size], a.batch_size, 1, gen, a.policy)
        t0 = time.perf_counter()
        train_epochs(model, opt, x, y, a.batch_size, 1, gen, a.policy)
        dt = time.perf_counter() - t0
        result["samples_per_s"] = x.shape[0] / dt
        result["activation_mib"] = activation_mib(model, x[: a.batch_size], y[: a.batch_size], a.policy)
    elif a.mode == "predict":
        x = xte[: a.samples]
        predict(model, x[: 4 * a.batch_size], a.batch_size)
        t0 = time.perf_counter()
        reps = 3
        for _ in range(reps):
            predict(model, x, a.batch_size)
        dt = time.perf_counter() - t0
        result["samples_per_s"] = reps * x.shape[0] / dt
    else:
        train_epochs(model, opt, xtr, ytr, a.batch_size, a.epochs, gen, a.policy)
        pred = predict(model, xte, 256).argmax(dim=1)
        result["test_accuracy"] = (pred == yte).float().mean().item()
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(result))


if __name__ == "__main__":
    main()
