#!/usr/bin/env python3
"""Regenerates the PyTorch 1.13 reference constants of bidirectional_test.cpp: nn.LSTM and nn.GRU
(= Keras's GRU with reset_after=True) with bidirectional=True, batch_first, float64, loaded with
the Keras-layout weights of the forward and backward layers (kernel [in, G * units], gates i f c o
and z r h; torch's layer 0 is the forward direction, its _reverse weights the backward one). The
outputs y [B, T, 2U] are Keras's merge_mode="concat" with return_sequences; the final states
h_n[0], h_n[1] are the forward and backward layers' final states. Gradients of
L = sum(y * wave(20)) w.r.t. the input and each direction's weights, mapped back to Keras's
layouts. Not run by the build: python3 torch_references_bidirectional.py prints every constant.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "testing"))

import torch  # noqa: E402

torch.set_default_dtype(torch.float64)
from torch_reference import emit, wave  # noqa: E402

B, T, I, U = 2, 4, 3, 2


def gru_perm(w):  # Keras z, r, h blocks <-> torch r, z, n along the last axis (self-inverse)
    return torch.cat([w[..., U:2 * U], w[..., :U], w[..., 2 * U:]], -1)


def run(name, gates, module, perm, two_bias_rows):
    # Direction d's weights: kernel tag 4 + 10 d, recurrent 5 + 10 d, bias 6 + 10 d (scale 0.5).
    weights = []
    for d in range(2):
        k = wave([I, gates * U], 4 + 10 * d, 0.5)
        r = wave([U, gates * U], 5 + 10 * d, 0.5)
        b = wave([2, gates * U] if two_bias_rows else [gates * U], 6 + 10 * d, 0.5)
        weights.append((k, r, b))
    m = module(I, U, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for d, suffix in enumerate(["", "_reverse"]):
            k, r, b = weights[d]
            getattr(m, "weight_ih_l0" + suffix).copy_(perm(k).t())
            getattr(m, "weight_hh_l0" + suffix).copy_(perm(r).t())
            getattr(m, "bias_ih_l0" + suffix).copy_(perm(b[0] if two_bias_rows else b))
            getattr(m, "bias_hh_l0" + suffix).copy_(
                perm(b[1]) if two_bias_rows else torch.zeros(gates * U))
    x = wave([B, T, I], 1, 0.5, requires_grad=True)
    y, state = m(x)
    h = state[0] if isinstance(state, tuple) else state
    (y * wave([B, T, 2 * U], 20)).sum().backward()
    emit(f"k{name}Y", y)
    emit(f"k{name}H", h)
    if isinstance(state, tuple):
        emit(f"k{name}C", state[1])
    emit(f"k{name}Dx", x.grad)
    for d, suffix in enumerate(["", "_reverse"]):
        tag = ["Forward", "Backward"][d]
        emit(f"k{name}{tag}Dkernel", perm(getattr(m, "weight_ih_l0" + suffix).grad.t()))
        emit(f"k{name}{tag}Drecurrent", perm(getattr(m, "weight_hh_l0" + suffix).grad.t()))
        db_ih = perm(getattr(m, "bias_ih_l0" + suffix).grad)
        db_hh = perm(getattr(m, "bias_hh_l0" + suffix).grad)
        emit(f"k{name}{tag}Dbias", torch.stack([db_ih, db_hh]) if two_bias_rows else db_ih)


if __name__ == "__main__":
    print(f"// python3 torch_references_bidirectional.py (torch {torch.__version__}); "
          f"B={B} T={T} I={I} U={U}")
    run("Lstm", 4, torch.nn.LSTM, lambda w: w, False)
    run("Gru", 3, torch.nn.GRU, gru_perm, True)
