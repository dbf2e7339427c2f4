"""A training program of your own, tuned by `osprey tune --command` (docs/guide/tuning.md).

It fits y = sin(3x) with `units` random tanh features and a linear head trained by gradient
descent, and after each epoch prints the line osprey reads:
    osprey-metric val_loss=<value> epoch=<epoch, counting from 1>
"""
import argparse
import math
import random

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--units", type=int, default=32)
parser.add_argument("--momentum", type=float, default=0.0)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--seed", type=int, default=0)
# A space may pass more (search_space.md's passes --model, --filters, --dropout ...); this
# small program has no use for them.
args, _ = parser.parse_known_args()

rng = random.Random(args.seed)
features = [(rng.gauss(0, 3), rng.uniform(-1, 1)) for _ in range(args.units)]


def phi(x):
    return [math.tanh(w * x + b) for w, b in features]


def data(n):
    xs = [rng.uniform(-1, 1) for _ in range(n)]
    return [(phi(x), math.sin(3 * x)) for x in xs]


train, val = data(100), data(50)
head, velocity = [0.0] * args.units, [0.0] * args.units


def mse(rows):
    errors = (sum(h * f for h, f in zip(head, x)) - y for x, y in rows)
    return sum(e * e for e in errors) / len(rows)  # inf, not an exception, once it diverges


for epoch in range(1, args.epochs + 1):
    for _ in range(5):  # full-batch steps
        grad = [0.0] * args.units
        for x, y in train:
            err = sum(h * f for h, f in zip(head, x)) - y
            for j, f in enumerate(x):
                grad[j] += 2 * err * f / len(train)
        for j in range(args.units):
            velocity[j] = args.momentum * velocity[j] - args.lr * grad[j]
            head[j] += velocity[j]
    loss = mse(val)
    print(f"osprey-metric val_loss={loss if math.isfinite(loss) else 1e30:.6g} epoch={epoch}",
          flush=True)
