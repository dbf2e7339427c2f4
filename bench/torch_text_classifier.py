#!/usr/bin/env python3
"""PyTorch's side of bench_text_classifier: the same two classifiers on the same shapes, ms per
training step (Adam, binary cross-entropy), best of --reps timings of --steps steps.
  python3 bench/torch_text_classifier.py --model bilstm|transformer [--vocab 20000]
      [--length 200] [--batch 32] [--steps 10] [--reps 3] [--threads 2]
"""
import argparse
import json
import time

import torch
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="bilstm", choices=["bilstm", "transformer"])
ap.add_argument("--vocab", type=int, default=20000)
ap.add_argument("--length", type=int, default=200)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--threads", type=int, default=2)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)


class BiLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(a.vocab, 128)
        self.rnn = nn.LSTM(128, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, 1)

    def forward(self, x):
        _, (h, _) = self.rnn(self.emb(x))
        return torch.sigmoid(self.out(torch.cat([h[0], h[1]], -1)))


class Encoder(nn.Module):
    """keras_hub's TransformerEncoder (post-norm, relu, eps 1e-5) is PyTorch's layer."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(a.vocab, 128)
        self.pos = nn.Parameter(torch.zeros(a.length, 128))
        self.enc = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
        self.out = nn.Linear(128, 1)

    def forward(self, x):
        return torch.sigmoid(self.out(self.enc(self.emb(x) + self.pos).mean(1)))


model = BiLSTM() if a.model == "bilstm" else Encoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randint(0, a.vocab, (a.batch, a.length))
y = torch.randint(0, 2, (a.batch, 1)).float()
loss_fn = nn.BCELoss()


def step():
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()


for _ in range(3):
    step()
best = 1e30
for _ in range(a.reps):
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    best = min(best, time.perf_counter() - t0)
print(json.dumps({"framework": "torch " + torch.__version__, "model": a.model, "vocab": a.vocab,
                  "length": a.length, "batch": a.batch, "threads": a.threads,
                  "ms_per_step": round(1e3 * best / a.steps, 2)}))
