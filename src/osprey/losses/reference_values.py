#!/usr/bin/env python3
"""Reference values for losses_test.cpp, from PyTorch 1.13 in float64.

Run: /usr/bin/python3 src/osprey/losses/reference_values.py
Keras and PyTorch differ in two places, handled here as Keras does: losses from probabilities
clip p to [1e-7, 1 - 1e-7] (torch's BCE clamps the log at -100 instead; cases here stay inside the
clip so both agree), and categorical losses from probabilities first divide p by its row sum.
"""
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
EPS = 1e-7


def show(name, loss, leaf):
    loss.backward()
    vals = ", ".join(f"{v:.12g}" for v in leaf.grad.flatten().tolist())
    print(f"{name}: loss {loss.item():.12g}\n  grad {{{vals}}}")


def none(name, t):
    print(f"{name}: {{{', '.join(f'{v:.12g}' for v in t.flatten().tolist())}}}")


L = [[2.0, 1.0, 0.1, -0.5], [0.5, 2.5, -1.0, 0.3], [-1.2, 0.4, 3.0, 0.0]]
labels = torch.tensor([0, 1, 3])
W = torch.tensor([0.5, 2.0, 1.0])
T = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.0, 1.0, 0.0, 0.0], [0.25, 0.25, 0.0, 0.5]])
P = [[0.2, 0.5, 0.1, 0.3], [0.05, 0.6, 0.25, 0.1], [0.3, 0.3, 0.2, 0.4]]  # rows need not sum to 1

x = torch.tensor(L, requires_grad=True)
show("sparse_logits_mean", F.cross_entropy(x, labels), x)
x = torch.tensor(L, requires_grad=True)
show("sparse_logits_weighted", (F.cross_entropy(x, labels, reduction="none") * W).sum() / 3, x)
none("sparse_logits_none", F.cross_entropy(torch.tensor(L), labels, reduction="none"))
x = torch.tensor(L, requires_grad=True)
show("sparse_logits_ignore", F.cross_entropy(x, torch.tensor([0, -1, 3]), ignore_index=-1), x)
p = torch.tensor(P, requires_grad=True)
show("sparse_probs_mean", F.nll_loss(torch.log((p / p.sum(-1, keepdim=True)).clamp(EPS, 1 - EPS)), labels), p)

x = torch.tensor(L, requires_grad=True)
show("categorical_logits_smooth", F.cross_entropy(x, T, label_smoothing=0.1), x)
p = torch.tensor(P, requires_grad=True)
ts = T * 0.9 + 0.1 / 4
show("categorical_probs_smooth",
     -(ts * torch.log((p / p.sum(-1, keepdim=True)).clamp(EPS, 1 - EPS))).sum(-1).mean(), p)
x = torch.tensor(L, requires_grad=True)
multi = torch.tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
show("categorical_logits_multihot", -(multi * F.log_softmax(x, -1)).sum(-1).mean(), x)

X = [[0.3, -1.2], [2.0, 0.1], [-0.7, 4.0]]
Z = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.3]])
Q = [[0.6, 0.2], [0.9, 0.55], [0.1, 0.75]]
x = torch.tensor(X, requires_grad=True)
show("binary_logits_mean", F.binary_cross_entropy_with_logits(x, Z), x)
x = torch.tensor(X, requires_grad=True)
show("binary_logits_smooth_sum",
     F.binary_cross_entropy_with_logits(x, Z * 0.8 + 0.1, reduction="none").mean(-1).sum(), x)
q = torch.tensor(Q, requires_grad=True)
show("binary_probs_mean", F.binary_cross_entropy(q, Z), q)
none("binary_probs_none", F.binary_cross_entropy(torch.tensor(Q), Z, reduction="none").mean(-1))

Y = torch.tensor([[1.0, -2.0], [0.5, 3.0], [0.0, 1.5]])
R = [[1.5, -0.5], [0.4, 3.2], [-2.5, 1.5]]
for name, fn in [("mse", F.mse_loss), ("mae", F.l1_loss),
                 ("huber1", lambda a, b, **k: F.huber_loss(a, b, delta=1.0, **k)),
                 ("huber05", lambda a, b, **k: F.huber_loss(a, b, delta=0.5, **k))]:
    r = torch.tensor(R, requires_grad=True)
    show(name + "_mean", fn(r, Y), r)
    r = torch.tensor(R, requires_grad=True)
    show(name + "_weighted_sum", (fn(r, Y, reduction="none").mean(-1) * W).sum(), r)
