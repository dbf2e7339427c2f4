#!/usr/bin/env python3
"""Generates golden_values_test.h: Keras-formula optimizer steps computed with PyTorch 1.13.

Run: /usr/bin/python3 src/osprey/optim/golden_values.py > src/osprey/optim/golden_values_test.h
The problem: two float64 variables, kernel [2, 3] and bias [3], with the gradient of a separable
quadratic, g = a * w + c, recomputed from the current weights before each of 6 steps.
Where torch's formulas differ from Keras's, the script bends torch to Keras's, never the reverse:
- Adam/AdamW: Keras adds epsilon to sqrt(v) and folds both bias corrections into the step size;
  torch adds eps to sqrt(v / (1 - b2^t)). Setting torch's eps to eps / sqrt(1 - b2^t) at step t
  gives exactly Keras's update.
- weight_decay on SGD: Keras 3 decays decoupled (w -= w * wd * lr before the step); torch's
  SGD weight_decay is an L2 term, so the script decays by hand before opt.step().
- clipnorm / global_clipnorm: torch's clip_grad_norm_ divides by (norm + 1e-6); the script clips
  with Keras's g * c / max(norm, c) and global scale c * min(1 / norm, 1 / c) instead.
- RMSprop: Keras puts epsilon inside the sqrt (sqrt(v + eps)), torch outside (sqrt(v) + eps);
  the two agree at eps = 0, so these cases use epsilon 0 (the tests also check eps = 1e-7
  against a hand-written double reference).
- SGD momentum with a schedule: Keras folds lr into the velocity, torch applies it after, so
  they differ when lr changes; that case is in the hand-written reference of sgd_test.cpp.
"""
import math

import torch

torch.set_default_dtype(torch.float64)

W0 = [0.5, -1.2, 0.3, 2.0, -0.7, 1.1]
AW = [1.0, 2.0, 0.5, 3.0, 1.5, 0.8]
CW = [0.1, -0.3, 0.2, 0.0, -0.5, 0.4]
B0 = [0.2, -0.4, 0.9]
AB = [2.5, 0.6, 1.2]
CB = [-0.2, 0.3, 0.1]
STEPS = 6


def exp_decay(initial, decay_steps, rate):
    return lambda step: initial * rate ** (step / decay_steps)


CASES = [
    # name, optimizer kind, kwargs, keras-side options
    ("sgd", "sgd", dict(lr=0.1), {}),
    ("sgd_momentum", "sgd", dict(lr=0.05, momentum=0.9), {}),
    ("sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=True), {}),
    ("sgd_momentum_weight_decay", "sgd", dict(lr=0.05, momentum=0.9), dict(weight_decay=0.1)),
    ("sgd_clipvalue", "sgd", dict(lr=0.1), dict(clipvalue=0.5)),
    ("adam", "adam", dict(lr=0.01), {}),
    ("adam_amsgrad", "adam", dict(lr=0.01, betas=(0.8, 0.5), amsgrad=True), {}),
    ("adam_clipnorm", "adam", dict(lr=0.01), dict(clipnorm=1.0)),
    ("adam_global_clipnorm", "adam", dict(lr=0.01), dict(global_clipnorm=2.0)),
    ("adam_exponential_decay", "adam", dict(lr=0.05), dict(schedule=exp_decay(0.05, 2, 0.5))),
    ("adamw", "adamw", dict(lr=0.01, weight_decay=0.1), {}),
    ("adamw_amsgrad_clipvalue", "adamw",
     dict(lr=0.01, betas=(0.9, 0.5), amsgrad=True, weight_decay=0.004), dict(clipvalue=0.5)),
    ("rmsprop_eps0", "rmsprop", dict(lr=0.01, alpha=0.9, eps=0.0), {}),
    ("rmsprop_momentum_eps0", "rmsprop", dict(lr=0.01, alpha=0.9, eps=0.0, momentum=0.9), {}),
    ("rmsprop_centered_eps0", "rmsprop", dict(lr=0.01, alpha=0.9, eps=0.0, centered=True), {}),
    ("rmsprop_centered_momentum_clipnorm_eps0", "rmsprop",
     dict(lr=0.01, alpha=0.9, eps=0.0, centered=True, momentum=0.5), dict(clipnorm=1.0)),
]


def run(kind, kwargs, keras):
    w = torch.tensor(W0).reshape(2, 3).requires_grad_()
    b = torch.tensor(B0).requires_grad_()
    params = [w, b]
    consts = [(torch.tensor(AW).reshape(2, 3), torch.tensor(CW).reshape(2, 3)),
              (torch.tensor(AB), torch.tensor(CB))]
    keras_eps = 1e-7
    if kind == "sgd":
        opt = torch.optim.SGD(params, **kwargs)
    elif kind == "adam":
        opt = torch.optim.Adam(params, eps=keras_eps, **kwargs)
    elif kind == "adamw":
        opt = torch.optim.AdamW(params, eps=keras_eps, **kwargs)
    else:
        opt = torch.optim.RMSprop(params, **kwargs)
    group = opt.param_groups[0]
    for t in range(1, STEPS + 1):
        if "schedule" in keras:
            group["lr"] = keras["schedule"](t - 1)  # Keras evaluates the schedule at iterations
        lr = group["lr"]
        with torch.no_grad():
            for p, (a, c) in zip(params, consts):
                p.grad = a * p + c
            if "clipnorm" in keras:
                cn = keras["clipnorm"]
                for p in params:
                    p.grad.mul_(cn / max(p.grad.norm().item(), cn))
            if "global_clipnorm" in keras:
                cn = keras["global_clipnorm"]
                norm = math.sqrt(sum((p.grad ** 2).sum().item() for p in params))
                scale = cn * min(1.0 / norm, 1.0 / cn)
                for p in params:
                    p.grad.mul_(scale)
            if "clipvalue" in keras:
                for p in params:
                    p.grad.clamp_(-keras["clipvalue"], keras["clipvalue"])
            if "weight_decay" in keras:
                for p in params:
                    p.sub_(p * keras["weight_decay"] * lr)
        if kind in ("adam", "adamw"):
            beta_2 = group["betas"][1]
            group["eps"] = keras_eps / math.sqrt(1.0 - beta_2 ** t)
        opt.step()
    return w.detach().flatten().tolist() + b.detach().tolist()


def main():
    print("// Generated by golden_values.py (PyTorch {}): Keras-formula optimizer steps; do not"
          .format(torch.__version__.split("a")[0]))
    print("// edit. Each array: kernel [2, 3] then bias [3] after 6 steps from kKernel0/kBias0.")
    print("#pragma once\n\n#include <array>\n\nnamespace osprey::optim::golden {\n")
    for name, values in (("kKernel0", W0), ("kKernelA", AW), ("kKernelC", CW),
                         ("kBias0", B0), ("kBiasA", AB), ("kBiasC", CB)):
        body = ", ".join(repr(v) for v in values)
        print(f"inline constexpr std::array<double, {len(values)}> {name} = {{{body}}};")
    print(f"inline constexpr int kSteps = {STEPS};\n")
    for name, kind, kwargs, keras in CASES:
        values = run(kind, kwargs, keras)
        ident = "k" + "".join(part.capitalize() for part in name.split("_"))
        body = ",\n    ".join(", ".join(f"{v:.17g}" for v in values[i:i + 3])
                              for i in range(0, len(values), 3))
        print(f"inline constexpr std::array<double, 9> {ident} = {{\n    {body}}};")
    print("\n}  // namespace osprey::optim::golden")


if __name__ == "__main__":
    main()
