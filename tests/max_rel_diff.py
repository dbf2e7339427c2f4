#!/usr/bin/env python3
"""Prints the largest relative difference between two model.safetensors files (float32), per
tensor max|a - b| / max|b|, as the distribute tests measure agreement; the shell tests that compare
a distributed job's saved weights with a reference job's call it.
Usage: max_rel_diff.py A.safetensors B.safetensors"""
import json
import struct
import sys

import numpy as np


def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], np.float32)
            for k, v in header.items() if k != "__metadata__"}


a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
print(max(float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-30)) for k in b))
