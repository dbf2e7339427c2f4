#!/usr/bin/env python3
"""Regenerates the PyTorch 1.13 reference constants embedded in conv1d_test.cpp and
pooling1d_test.cpp (float64; inputs from the formula of test::wave in layer_test_helpers.h).
Not run by the build: python3 torch_references_1d.py prints every constant as C++. Keras's
layouts: x [N, T, C], kernel [k, C / groups, filters]; PyTorch's: x [N, C, T], weight
[filters, C / groups, k]. Keras's "same" pads TensorFlow's way (the extra step on the right),
"causal" pads dilation * (k - 1) steps on the left.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "testing"))

import torch
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
from torch_reference import emit, wave  # noqa: E402






ncl = lambda t: t.permute(0, 2, 1)  # [N, T, C] <-> [N, C, T]
oik = lambda k: k.permute(2, 1, 0)  # [k, in, out] -> [out, in, k]

# Conv1D valid with bias, channels_last; and the gradient of sum(y * wave) w.r.t. x and kernel.
x = wave([2, 7, 3], 1).requires_grad_()
k = wave([3, 3, 4], 2, 0.3).requires_grad_()
b = wave([4], 3)
y = ncl(F.conv1d(ncl(x), oik(k), b))
emit("kConv1dValid", y)
(y * wave([2, 5, 4], 9)).sum().backward()
emit("kConv1dValidDx", x.grad)
emit("kConv1dValidDkernel", k.grad)
# Causal, dilation 2, relu, no bias.
x = wave([1, 8, 2], 4)
k = wave([3, 2, 3], 5, 0.3)
emit("kConv1dCausalDilatedRelu", ncl(F.relu(F.conv1d(F.pad(ncl(x), (4, 0)), oik(k), dilation=2))))
# channels_first, same, stride 2, groups 2: T = 9, total pad (5 - 1) * 2 + 3 - 9 = 2: 1 and 1.
x = wave([1, 4, 9], 6)
k = wave([3, 2, 4], 7, 0.3)
b = wave([4], 8)
emit("kConv1dSameStride2Grouped", F.conv1d(F.pad(x, (1, 1)), oik(k), b, stride=2, groups=2))
# Pools on [1, 7, 2]: max 2 (valid, drops the last step), average 3 stride 1 same (the mean of
# the real steps), channels_first max 3 stride 2 same (T = 7: total pad 2, 1 and 1, -inf).
x = wave([1, 7, 2], 10)
emit("kMaxPool1d2", ncl(F.max_pool1d(ncl(x), 2)))
emit("kAvgPool1d3Same", ncl(F.avg_pool1d(ncl(x), 3, stride=1, padding=1, count_include_pad=False)))
x = wave([1, 2, 7], 11)
emit("kMaxPool1d3Stride2SameChannelsFirst", F.max_pool1d(x, 3, stride=2, padding=1))
x = wave([2, 5, 3], 12)
emit("kGlobalAvg1d", x.mean(dim=1))
emit("kGlobalMax1d", x.max(dim=1).values)
