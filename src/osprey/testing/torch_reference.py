"""What the PyTorch reference scripts beside the tests share (nn/layers/torch_references*.py,
autograd/ops/*_torch_references.py): the inputs of test::wave / testing's wave() in C++, and the
printing of a tensor as a C++ constant. The scripts import it with
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "testing"))
"""
import math

import torch


def wave(shape, tag, scale=1.0, offset=0.0, requires_grad=False):
    """v[i] = sin(0.37 i + 0.11 tag) * scale + offset, row-major, float64."""
    n = 1
    for d in shape:
        n *= d
    v = [math.sin(0.37 * i + 0.11 * tag) * scale + offset for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(shape).requires_grad_(requires_grad)


def emit(name, t, inline=False):
    """Prints `const std::vector<double> name = {...};` (inline: for a header), 100 columns."""
    vals = [repr(float(v)) for v in t.detach().flatten().tolist()]
    lines, cur = [], "   "
    for v in vals:
        if len(cur) + len(v) + 2 > 100:
            lines.append(cur)
            cur = "   "
        cur += " " + v + ","
    lines.append(cur)
    prefix = "inline " if inline else ""
    print(f"// {list(t.shape)}\n{prefix}const std::vector<double> {name} = {{\n" + "\n".join(lines)
          + "\n};")
