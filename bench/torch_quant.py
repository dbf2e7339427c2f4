#!/usr/bin/python3
"""PyTorch side of bench/compare_torch --what int8: the Fashion-MNIST MLP or CNN of torch_train.py,
optionally trained in float32 (Adam 1e-3, batch 128, as bench_quant), then predicted on the 10,000
test images at one batch size before and after torch.quantization.quantize_dynamic (int8 Linear
layers: per-tensor int8 weights, activations quantized dynamically per batch) on each quantized
engine this build has (Debian's 1.13 has onednn and qnnpack, no fbgemm). quantize_dynamic has no
int8 convolution: in the CNN only the two Linear layers become int8, the convolutions stay float32
(what PyTorch's dynamic quantization offers for that model). Same protocol as bench_quant.cpp:
one warm-up of 4 batches, then the best of --reps passes. One JSON line.

  torch_quant.py [--model mlp] [--batch-size 256] [--epochs 0] [--threads 2] [--reps 5] [--seed 42]
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import build, load, predict, train_epochs  # noqa: E402


def samples_per_s(model, x, batch, reps):
    predict(model, x[: 4 * batch], batch)
    best = 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        predict(model, x, batch)
        best = max(best, x.shape[0] / (time.perf_counter() - t0))
    return best


def accuracy(model, x, y, batch):
    return (predict(model, x, batch).argmax(dim=1) == y).float().mean().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--engines", default="onednn,fbgemm", help="tried in order; missing ones skipped")
    p.add_argument("--data", default=os.environ.get("OSPREY_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    (xtr, ytr), (xte, yte) = load(a.data)
    model = build(a.model)
    if a.epochs > 0:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        train_epochs(model, opt, xtr, ytr, 128, a.epochs, gen)
    model.eval()
    result = {"framework": "pytorch " + torch.__version__, "model": a.model, "batch": a.batch_size,
              "threads": a.threads, "f32_samples_per_s": samples_per_s(model, xte, a.batch_size, a.reps)}
    if a.epochs > 0:
        result["f32_accuracy"] = accuracy(model, xte, yte, a.batch_size)
    for engine in a.engines.split(","):
        if engine not in torch.backends.quantized.supported_engines:
            continue
        torch.backends.quantized.engine = engine
        q = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        result[f"int8_{engine}_samples_per_s"] = samples_per_s(q, xte, a.batch_size, a.reps)
        if a.epochs > 0:
            result[f"int8_{engine}_accuracy"] = accuracy(q, xte, yte, a.batch_size)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
