#!/usr/bin/env python3
"""Regenerates the PyTorch 1.13 reference values embedded in rnn_torch_test.cpp: forward outputs,
final states and the gradients of L = sum(y * wave) + sum(h * wave) (+ sum(c * wave)) w.r.t. the
inputs, the initial states and every weight, for nn.LSTM, nn.GRU (= Keras reset_after=True),
Keras's reset_after=False GRU written out in torch ops, and nn.RNN (tanh, relu). Weights in Keras
layouts (kernel [in, G * units], gates i f c o / z r h), mapped to torch's inside. float64; inputs
from the formula of wave() in the test. Not run by the build: python3 rnn_torch_references.py
prints every constant as C++.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "testing"))

import torch

torch.set_default_dtype(torch.float64)
B, T, I, U = 2, 3, 3, 2
from torch_reference import emit  # noqa: E402
from torch_reference import wave as wave_of  # noqa: E402


def wave(shape, tag, scale=0.5):  # the test's inputs: scale 0.5, with gradients
    return wave_of(shape, tag, scale, requires_grad=True)






def gru_perm(w):  # Keras z, r, h blocks -> torch r, z, n along the last axis
    return torch.cat([w[..., U:2 * U], w[..., :U], w[..., 2 * U:]], -1)


def run(name, gates, bias_shape, forward, has_c):
    x, h0 = wave([B, T, I], 1), wave([B, U], 2)
    c0 = wave([B, U], 3) if has_c else None
    k, r, b = wave([I, gates * U], 4), wave([U, gates * U], 5), wave(bias_shape, 6)
    y, h, c, grads_of = forward(x, h0, c0, k, r, b)
    loss = (y * wave([B, T, U], 7, 1.0)).sum() + (h * wave([B, U], 8, 1.0)).sum()
    if has_c:
        loss = loss + (c * wave([B, U], 9, 1.0)).sum()
    loss.backward()
    dk, dr, db = grads_of() if grads_of else (k.grad, r.grad, b.grad)
    emit(f"k{name}Y", y)
    emit(f"k{name}H", h)
    if has_c:
        emit(f"k{name}C", c)
    emit(f"k{name}Dx", x.grad)
    emit(f"k{name}Dh0", h0.grad)
    if has_c:
        emit(f"k{name}Dc0", c0.grad)
    emit(f"k{name}Dkernel", dk)
    emit(f"k{name}Drecurrent", dr)
    emit(f"k{name}Dbias", db)


def module_with(m, w_ih, w_hh, b_ih, b_hh):
    """Loads Keras-layout weights (already mapped to torch's gate order) into an nn.RNNBase."""
    with torch.no_grad():
        m.weight_ih_l0.copy_(w_ih.t())
        m.weight_hh_l0.copy_(w_hh.t())
        m.bias_ih_l0.copy_(b_ih)
        m.bias_hh_l0.copy_(b_hh)
    return m


def lstm(x, h0, c0, k, r, b):
    m = module_with(torch.nn.LSTM(I, U, batch_first=True), k, r, b, torch.zeros(4 * U))
    y, (h, c) = m(x, (h0[None], c0[None]))
    return y, h[0], c[0], lambda: (m.weight_ih_l0.grad.t(), m.weight_hh_l0.grad.t(),
                                   m.bias_ih_l0.grad)


def gru_after(x, h0, c0, k, r, b):  # PyTorch's GRU is Keras's reset_after=True
    m = module_with(torch.nn.GRU(I, U, batch_first=True), gru_perm(k), gru_perm(r),
                    gru_perm(b[0]), gru_perm(b[1]))
    y, h = m(x, h0[None])
    back = gru_perm  # swapping the first two blocks is its own inverse
    return y, h[0], None, lambda: (back(m.weight_ih_l0.grad.t()), back(m.weight_hh_l0.grad.t()),
                                   torch.stack([back(m.bias_ih_l0.grad),
                                                back(m.bias_hh_l0.grad)]))


def gru_before(x, h0, c0, k, r, b):  # Keras GRU(reset_after=False), step by step
    h, ys = h0, []
    for t in range(T):
        xp = x[:, t] @ k + b
        z = torch.sigmoid(xp[:, :U] + h @ r[:, :U])
        rr = torch.sigmoid(xp[:, U:2 * U] + h @ r[:, U:2 * U])
        hh = torch.tanh(xp[:, 2 * U:] + (rr * h) @ r[:, 2 * U:])
        h = z * h + (1 - z) * hh
        ys.append(h)
    return torch.stack(ys, 1), h, None, None


def simple(nonlinearity):
    def f(x, h0, c0, k, r, b):
        m = module_with(torch.nn.RNN(I, U, nonlinearity=nonlinearity, batch_first=True), k, r, b,
                        torch.zeros(U))
        y, h = m(x, h0[None])
        return y, h[0], None, lambda: (m.weight_ih_l0.grad.t(), m.weight_hh_l0.grad.t(),
                                       m.bias_ih_l0.grad)
    return f


if __name__ == "__main__":
    print(f"// python3 rnn_torch_references.py (torch {torch.__version__}); B={B} T={T} I={I} U={U}")
    run("Lstm", 4, [4 * U], lstm, True)
    run("GruResetAfter", 3, [2, 3 * U], gru_after, False)
    run("GruResetBefore", 3, [3 * U], gru_before, False)
    run("SimpleTanh", 1, [U], simple("tanh"), False)
    run("SimpleRelu", 1, [U], simple("relu"), False)
