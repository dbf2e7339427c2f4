#!/usr/bin/env python3
"""Regenerates the PyTorch 1.13 reference constants of multi_head_attention_test.cpp: torch's
nn.MultiheadAttention (batch_first, float64) with the weights of a Keras-layout layer (E = 8,
2 heads of key_dim 4). Keras's query/kernel [E, heads, key_dim] is torch's W_q transposed:
kernel.reshape(E, E).T; attention_output/kernel [heads, value_dim, E] likewise
(out_proj.weight = kernel.reshape(E, E).T). Not run by the build: python3
torch_references_attention.py prints every constant as C++.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "testing"))

import torch  # noqa: E402

torch.set_default_dtype(torch.float64)
from torch_reference import emit, wave  # noqa: E402

E, H, D = 8, 2, 4
qk, qb = wave([E, H, D], 3, 0.3), wave([H, D], 4, 0.1)
kk, kb = wave([E, H, D], 5, 0.3), wave([H, D], 6, 0.1)
vk, vb = wave([E, H, D], 7, 0.3), wave([H, D], 8, 0.1)
ok, ob = wave([H, D, E], 9, 0.3), wave([E], 10, 0.1)


def mha():
    m = torch.nn.MultiheadAttention(E, H, batch_first=True)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([qk.reshape(E, E).T, kk.reshape(E, E).T,
                                          vk.reshape(E, E).T]))
        m.in_proj_bias.copy_(torch.cat([qb.flatten(), kb.flatten(), vb.flatten()]))
        m.out_proj.weight.copy_(ok.reshape(E, E).T)
        m.out_proj.bias.copy_(ob)
    return m


# Cross-attention: query [2, 3, 8] over value = key [2, 5, 8]; gradients of sum(y * wave).
m = mha()
q = wave([2, 3, E], 1, requires_grad=True)
kv = wave([2, 5, E], 2, requires_grad=True)
y, _ = m(q, kv, kv)
emit("kMhaCross", y)
(y * wave([2, 3, E], 11)).sum().backward()
emit("kMhaCrossDquery", q.grad)
emit("kMhaCrossDvalue", kv.grad)
# d query/kernel in Keras's layout: W_q's gradient transposed back.
emit("kMhaCrossDqueryKernel", m.in_proj_weight.grad[:E].T.reshape(E, H, D))
emit("kMhaCrossDoutputKernel", m.out_proj.weight.grad.T.reshape(H, D, E))
# Causal self-attention on x [2, 4, 8].
x = wave([2, 4, E], 12)
y, _ = mha()(x, x, x, attn_mask=torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1))
emit("kMhaCausal", y)
# Key padding: batch 0 has 4 real keys of 5, batch 1 has 3; the weights averaged over heads.
pad = torch.tensor([[False, False, False, False, True], [False, False, False, True, True]])
y, w = mha()(q.detach(), kv.detach(), kv.detach(), key_padding_mask=pad)
emit("kMhaPadded", y)
emit("kMhaPaddedWeights", w)
