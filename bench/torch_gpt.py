#!/usr/bin/env python3
"""PyTorch's side of bench_gpt: nanoGPT's model (model.py's GPT: fused c_attn, pre-norm blocks,
exact GELU, tied token embedding and head) trained on Tiny Shakespeare at the character level
with nanoGPT's schedule (AdamW, betas 0.9/0.99, weight decay 0.1 on 2-D weights only, global
grad clip 1.0, linear warmup then cosine decay to min_lr), so its tokens/s and validation loss
stand beside osprey's for the same model and the same steps.
  python3 bench/torch_gpt.py --data data/tinyshakespeare.txt [--model gpt|lstm|gru] [--units 512]
      [--iters 2000] [--threads 2]
      [--n-layer 4 --n-head 4 --n-embd 128 --block 64 --batch 12] [--eval-interval 250]
      [--eval-iters 20] [--time-iters 0] [--init FILE.safetensors] [--losses N]
--time-iters N: time N steps after 5 warm-up steps and print tokens/s only (no evaluation).
--init: start from these weights (osprey's names, as bench_gpt --save-init writes them); with
--losses N, print the first N training losses on fixed batches (the 20-step agreement check).
Prints JSON lines; the last one is the summary.
"""
import argparse
import json
import math
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--data", default="data/tinyshakespeare.txt")
ap.add_argument("--model", default="gpt", choices=["gpt", "lstm", "gru"])
ap.add_argument("--units", type=int, default=512)
ap.add_argument("--iters", type=int, default=2000)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--n-layer", type=int, default=4)
ap.add_argument("--n-head", type=int, default=4)
ap.add_argument("--n-embd", type=int, default=128)
ap.add_argument("--block", type=int, default=64)
ap.add_argument("--batch", type=int, default=12)
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--min-lr", type=float, default=1e-4)
ap.add_argument("--warmup", type=int, default=100)
ap.add_argument("--eval-interval", type=int, default=250)
ap.add_argument("--eval-iters", type=int, default=20)
ap.add_argument("--time-iters", type=int, default=0)
ap.add_argument("--init", default="")
ap.add_argument("--losses", type=int, default=0)
ap.add_argument("--seed", type=int, default=1337)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)

text = open(a.data, encoding="utf-8").read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = np.array([stoi[c] for c in text], dtype=np.int64)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]
rng = np.random.default_rng(a.seed)


def get_batch(split):
    d = train_data if split == "train" else val_data
    ix = rng.integers(0, len(d) - a.block, a.batch)
    x = torch.from_numpy(np.stack([d[i:i + a.block] for i in ix]))
    y = torch.from_numpy(np.stack([d[i + 1:i + 1 + a.block] for i in ix]))
    return x, y


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d, bias=False)
        self.c_proj = nn.Linear(d, d, bias=False)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d, bias=False)
        self.mlp_proj = nn.Linear(4 * d, d, bias=False)
        mask = torch.ones(a.block, a.block, dtype=torch.bool).tril()
        self.register_buffer("bias", torch.zeros(a.block, a.block).masked_fill(~mask, -math.inf))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1))) + self.bias[:T, :T]
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, a.n_embd)
        self.wpe = nn.Embedding(a.block, a.n_embd)
        self.h = nn.ModuleList([Block(a.n_embd, a.n_head) for _ in range(a.n_layer)])
        self.ln_f = nn.LayerNorm(a.n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * a.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for blk in self.h:
            x = blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        blob = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        lo, hi = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(blob[lo:hi], dtype=np.float32).copy()
                                     .reshape(info["shape"]))
    return out


def load_osprey(model, path):
    """osprey's names and layouts (Keras's: Dense kernels [in, out], MultiHeadAttention's
    query/kernel [d, heads, head_dim]) onto the twin's."""
    w = read_safetensors(path)

    def get(suffix):
        hits = [k for k in w if k.endswith(suffix)]
        assert len(hits) == 1, (suffix, hits)
        return w[hits[0]]

    d = a.n_embd
    with torch.no_grad():
        model.wte.weight.copy_(get("token_embedding/embeddings"))
        model.wpe.weight.copy_(get("position_embedding/embeddings"))
        for i, blk in enumerate(model.h):
            p = f"block_{i}/"
            blk.ln_1.weight.copy_(get(p + "self_attention_layer_norm/gamma"))
            blk.ln_2.weight.copy_(get(p + "feedforward_layer_norm/gamma"))
            qkv = [get(p + f"self_attention/{n}/kernel").reshape(d, d).t()
                   for n in ("query", "key", "value")]
            blk.c_attn.weight.copy_(torch.cat(qkv, 0))
            blk.c_proj.weight.copy_(
                get(p + "self_attention/attention_output/kernel").reshape(d, d).t())
            blk.c_fc.weight.copy_(get(p + "feedforward_intermediate_dense/kernel").t())
            blk.mlp_proj.weight.copy_(get(p + "feedforward_output_dense/kernel").t())
        model.ln_f.weight.copy_(get("final_norm/gamma"))


class RNN(nn.Module):
    """bench_gpt --model lstm|gru's twin: Embedding -> nn.LSTM / nn.GRU -> Linear."""

    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, a.n_embd)
        cell = nn.LSTM if a.model == "lstm" else nn.GRU
        self.rnn = cell(a.n_embd, a.units, num_layers=a.n_layer, batch_first=True)
        self.head = nn.Linear(a.units, vocab)

    def forward(self, idx, targets):
        logits = self.head(self.rnn(self.emb(idx))[0])
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


model = GPT(len(chars)) if a.model == "gpt" else RNN(len(chars))
for m in model.modules():  # nanoGPT's bias=False: LayerNorms without beta, kept at 0
    if isinstance(m, nn.LayerNorm):
        m.bias.requires_grad_(False)
if a.init:
    load_osprey(model, a.init)
decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.99),
                        eps=1e-8)


def lr_at(it):
    """osprey's (Keras's) CosineDecay from 0 with warmup_target lr: linear warmup over --warmup
    steps from 0, then cosine to min_lr over the rest (nanoGPT warms up from lr / (warmup + 1))."""
    if a.losses:
        return a.lr
    if it < a.warmup:
        return a.lr * it / a.warmup
    ratio = min(1.0, (it - a.warmup) / max(1, a.iters - a.warmup))
    return a.min_lr + 0.5 * (1 + math.cos(math.pi * ratio)) * (a.lr - a.min_lr)


def step(it, x, y):
    for g in opt.param_groups:
        g["lr"] = lr_at(it)
    loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


@torch.no_grad()
def estimate(split):
    return float(np.mean([model(*get_batch(split)).item() for _ in range(a.eval_iters)]))


head = {"framework": "torch " + torch.__version__, "model": a.model, "threads": a.threads,
        "n_layer": a.n_layer, "n_head": a.n_head, "n_embd": a.n_embd, "units": a.units,
        "block": a.block, "batch": a.batch}
if a.losses:
    fixed = [(torch.from_numpy(np.stack([train_data[i * a.block + j * 7:][:a.block]
                                         for j in range(a.batch)])),
              torch.from_numpy(np.stack([train_data[i * a.block + j * 7 + 1:][:a.block]
                                         for j in range(a.batch)]))) for i in range(a.losses)]
    print(json.dumps({**head, "losses": [step(i, x, y) for i, (x, y) in enumerate(fixed)]}))
elif a.time_iters:
    for i in range(5):
        step(i, *get_batch("train"))
    t0 = time.perf_counter()
    for i in range(a.time_iters):
        step(5 + i, *get_batch("train"))
    dt = time.perf_counter() - t0
    print(json.dumps({**head, "iters": a.time_iters,
                      "tokens_per_s": round(a.time_iters * a.batch * a.block / dt, 1),
                      "ms_per_step": round(1e3 * dt / a.time_iters, 2)}))
else:
    t0 = time.perf_counter()
    train_time = 0.0
    for it in range(a.iters + 1):
        if it % a.eval_interval == 0 or it == a.iters:
            print(json.dumps({"iter": it, "train_loss": round(estimate("train"), 4),
                              "val_loss": round(estimate("val"), 4),
                              "elapsed_s": round(time.perf_counter() - t0, 1)}), flush=True)
        if it == a.iters:
            break
        s0 = time.perf_counter()
        step(it, *get_batch("train"))
        train_time += time.perf_counter() - s0
    print(json.dumps({**head, "iters": a.iters, "val_loss": round(estimate("val"), 4),
                      "tokens_per_s": round(a.iters * a.batch * a.block / train_time, 1),
                      "train_s": round(train_time, 1)}))
