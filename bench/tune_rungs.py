#!/usr/bin/python3
"""How much a short training run says about a long one, read off RandomSearch studies.

Every RandomSearch trial of `bench_tune --suite fmnist --fmnist-dir DIR` trains max_epochs, so
its epoch-by-epoch validation accuracy shows what successive halving would have seen at each
rung. For each study DIR/rs<seed> this prints the rank correlation (Spearman) between a
configuration's best validation accuracy after 1, 3 and 9 epochs and its best over all epochs,
where the five best configurations ranked after one epoch, how many reach --good, and the best
over the first --first trials (a RandomSearch given Hyperband's epochs: its first trials are
exactly what a shorter search with the same seed runs).

  /usr/bin/python3 bench/tune_rungs.py DIR [--first 13] [--good 0.86]
"""
import argparse
import glob
import json
import os

import numpy as np


def ranks(a):
    return np.argsort(np.argsort(a))


def spearman(a, b):
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def read_study(study):
    trials = []
    for path in sorted(glob.glob(os.path.join(study, "trial_*", "trial.json"))):
        with open(path) as f:
            t = json.load(f)
        if t["status"] != "completed" or not t["executions"]:
            continue
        acc = [e["metrics"]["val_accuracy"] for e in t["executions"][0]]
        trials.append({"id": int(t["trial_id"]), "acc": acc, "values": t["hyperparameters"]["values"]})
    return trials


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--first", type=int, default=13)
    parser.add_argument("--good", type=float, default=0.86)
    args = parser.parse_args()
    for study in sorted(glob.glob(os.path.join(args.directory, "rs*"))):
        trials = read_study(study)
        epochs = max((len(t["acc"]) for t in trials), default=0)
        full = [t for t in trials if len(t["acc"]) == epochs]
        if len(full) < 5:
            continue
        best = np.array([max(t["acc"]) for t in full])
        line = [f"{os.path.basename(study)}: {len(full)} trials of {epochs} epochs"]
        for rung in (1, 3, 9):
            if rung < epochs:
                line.append(f"spearman @{rung} {spearman(np.array([max(t['acc'][:rung]) for t in full]), best):.2f}")
        line.append(f">= {args.good}: {int((best >= args.good).sum())}")
        first = [max(t["acc"]) for t in full if t["id"] < args.first]
        if first:
            line.append(f"best of the first {args.first}: {max(first):.4f}, of all: {best.max():.4f}")
        print("; ".join(line))
        at_one = ranks(-np.array([t["acc"][0] for t in full])) + 1
        top = np.argsort(-best)[:5]
        print("   rank after 1 epoch of the 5 best:", [int(at_one[i]) for i in top])
        for i in top:
            v = full[i]["values"]
            desc = " ".join(f"{k}={v[k]:.3g}" if isinstance(v[k], float) else f"{k}={v[k]}" for k in sorted(v))
            print(f"   {best[i]:.4f} at epoch {int(np.argmax(full[i]['acc'])) + 1}: {desc}")


if __name__ == "__main__":
    main()
