#!/usr/bin/env python3
"""Regenerates the PyTorch 1.13 reference constants embedded in attention_test.cpp: values and
gradients of scaled dot-product attention in float64. PyTorch 1.13 has no
F.scaled_dot_product_attention (it came in 2.0), so the formula is written out as PyTorch 2
documents it: softmax(q k^T * scale + mask) v, causal = ones(Tq, Tk).tril() (top-left), grouped
kv heads repeated with repeat_interleave. Inputs from the same formula as wave() in the test.
Not run by the build: python3 attention_torch_references.py prints every constant as C++.
"""
import math

import torch

torch.set_default_dtype(torch.float64)


def wave(shape, tag, scale=1.0):
    n = 1
    for d in shape:
        n *= d
    return torch.tensor([math.sin(0.37 * i + 0.11 * tag) * scale for i in range(n)]).reshape(shape)


def emit(name, t):
    vals = [repr(float(v)) for v in t.flatten().tolist()]
    lines, cur = [], "   "
    for v in vals:
        if len(cur) + len(v) + 2 > 100:
            lines.append(cur)
            cur = "   "
        cur += " " + v + ","
    lines.append(cur)
    print(f"// {list(t.shape)}\nconst std::vector<double> {name} = {{\n" + "\n".join(lines) + "\n};")


def attention(q, k, v, causal=False, bias=None, key_padding=None, scale=None):
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-1, -2) * scale
    if bias is not None:
        s = s + bias
    if causal:
        s = s.masked_fill(~torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(), -math.inf)
    if key_padding is not None:  # true = a real key
        s = s.masked_fill(~key_padding[:, None, None, :], -math.inf)
    return torch.softmax(s, dim=-1) @ v


def case(prefix, q_shape, k_shape, v_shape, **kw):
    q = wave(q_shape, 1).requires_grad_()
    k = wave(k_shape, 2).requires_grad_()
    v = wave(v_shape, 3).requires_grad_()
    y = attention(q, k, v, **kw)
    (y * wave(list(y.shape), 4)).sum().backward()
    emit(prefix + "Out", y.detach())
    emit(prefix + "Dq", q.grad)
    emit(prefix + "Dk", k.grad)
    emit(prefix + "Dv", v.grad)


case("kPlain", [1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 3])
# Causal with Tq < Tk, grouped heads (4 query heads on 2 kv heads), key padding, an additive
# [Tq, Tk] mask and scale 0.6.
kp = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 0, 1, 1, 0, 1]], dtype=torch.bool)
case("kMasked", [2, 4, 4, 3], [2, 2, 6, 3], [2, 2, 6, 2], causal=True, bias=wave([4, 6], 5, 0.5),
     key_padding=kp, scale=0.6)
