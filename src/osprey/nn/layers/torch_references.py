#!/usr/bin/env python3
"""Regenerates the PyTorch 1.13 reference constants embedded in conv2d_test.cpp, pooling2d_test.cpp,
batch_normalization_test.cpp and layer_normalization_test.cpp (float64; inputs from the same
formula as test::wave in layer_test_helpers.h). Not run by the build: python3 torch_references.py
prints every constant as C++.
"""
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "testing"))

import torch
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
from torch_reference import emit, wave  # noqa: E402
def wave(shape, tag, scale=1.0, offset=0.0):
    n = 1
    for d in shape: n *= d
    v = [math.sin(0.37 * i + 0.11 * tag) * scale + offset for i in range(n)]
    return torch.tensor(v).reshape(shape)
def emit(name, t):
    vals = [repr(float(v)) for v in t.flatten().tolist()]
    lines, cur = [], "   "
    for v in vals:
        if len(cur) + len(v) + 2 > 100:
            lines.append(cur); cur = "   "
        cur += " " + v + ","
    lines.append(cur)
    print(f"// {list(t.shape)}\nconst std::vector<double> {name} = {{\n" + "\n".join(lines) + "\n};")
nhwc = lambda t: t.permute(0, 3, 1, 2)
back = lambda t: t.permute(0, 2, 3, 1)
oihw = lambda k: k.permute(3, 2, 0, 1)
# Conv case 1: valid, NHWC, bias
x = wave([2,5,5,3], 1); k = wave([3,3,3,4], 2, 0.3); b = wave([4], 3)
emit("kConvValid", back(F.conv2d(nhwc(x), oihw(k), b)))
# Conv case 2: same stride 2 (TF pads bottom/right), relu, no bias
x = wave([1,6,6,2], 4); k = wave([3,3,2,3], 5, 0.3)
emit("kConvSameStride2Relu", back(F.relu(F.conv2d(F.pad(nhwc(x), (0,1,0,1)), oihw(k), stride=2))))
# Conv case 3: NCHW groups 2 dilation 2
x = wave([1,4,7,7], 6); k = wave([3,3,2,4], 7, 0.3); b = wave([4], 8)
emit("kConvGroupedDilated", F.conv2d(x, oihw(k), b, dilation=2, groups=2))
# Pools
x = wave([1,4,4,2], 9)
emit("kMaxPool2", back(F.max_pool2d(nhwc(x), 2)))
x = wave([1,4,5,1], 10)
emit("kMaxPool3Same", back(F.max_pool2d(nhwc(x), 3, stride=1, padding=1)))
emit("kAvgPool3Same", back(F.avg_pool2d(nhwc(x), 3, stride=1, padding=1, count_include_pad=False)))
x = wave([1,2,3,3], 11)
emit("kAvgPool2ChannelsFirst", F.avg_pool2d(x, 2, stride=1))
x = wave([1,3,4,2], 12)
emit("kGlobalAvg", x.mean(dim=(1,2)))
# BatchNorm [4, 3]
x = wave([4,3], 13, 2.0, 0.5); g = wave([3], 14, 0.3, 1.0); be = wave([3], 15, 0.2)
emit("kBnTrain", F.batch_norm(x, None, None, g, be, training=True, eps=1e-3))
mean = x.mean(0); var = x.var(0, unbiased=False)
mm = 0.01 * mean; mv = 0.99 + 0.01 * var
emit("kBnMovingMean", mm); emit("kBnMovingVar", mv)
emit("kBnInfer", F.batch_norm(x, mm, mv, g, be, training=False, eps=1e-3))
x = wave([2,3,2,2], 16, 1.5, -0.3)
emit("kBnTrainNchw", F.batch_norm(x, None, None, None, None, training=True, eps=1e-3))
# LayerNorm
x = wave([2,3,4], 17, 2.0, 0.2); g = wave([4], 18, 0.3, 1.0); be = wave([4], 19, 0.2)
emit("kLn", F.layer_norm(x, [4], g, be, eps=1e-3))
g2 = wave([3,4], 20, 0.3, 1.0)
emit("kLn2", F.layer_norm(x, [3,4], g2, None, eps=1e-3))
