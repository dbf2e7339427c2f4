#!/usr/bin/env python3
"""A trial program for `osprey tune --command` (tests/tune_command_test.sh) with a known optimum.

loss = (x - 3)^2 + (y - 0.5)^2 + 1 / (epoch + 1), reported after each of --epochs epochs, so the
best trial is x=3, y=0.5 and each trial's best epoch is its last. --report picks the channel:
  stdout     `osprey-metric loss=L epoch=E` lines, E counted from 1 ("Epoch 1/3");
  jsonl      JSON lines appended to $OSPREY_METRIC_FILE (what osprey's report_metric writes),
             "epoch" counted from 1 too;
  hypertune  cloudml-hypertune's format: the whole file $CLOUD_ML_HP_METRIC_FILE rewritten per
             report, values and global_step as strings, global_step the 0-based epoch as a Keras
             callback's on_epoch_end(epoch) passes it.
--crash-x X exits 3 with "boom: bad lr" on stderr when x == X; --sleep S waits S seconds after
each report (S x 5 when the loss is above --slow-above); a "finished" marker is written in
--trial-dir at the end, so a test can tell a trial that was killed from one that ran out.
"""
import argparse
import json
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--x", type=int, required=True)
p.add_argument("--y", type=float, required=True)
p.add_argument("--epochs", type=int, required=True)
p.add_argument("--trial-dir", required=True)
p.add_argument("--report", choices=["stdout", "jsonl", "hypertune"], default="stdout")
p.add_argument("--crash-x", type=int)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--slow-above", type=float, default=float("inf"))
a = p.parse_args()

print(f"training x={a.x} y={a.y}")  # an ordinary line osprey echoes
if a.crash_x is not None and a.x == a.crash_x:
    print("boom: bad lr", file=sys.stderr)
    sys.exit(3)
hypertune_log = []
for epoch in range(a.epochs):
    loss = (a.x - 3) ** 2 + (a.y - 0.5) ** 2 + 1.0 / (epoch + 1)
    if a.report == "stdout":
        print(f"osprey-metric loss={loss!r} epoch={epoch + 1}")
    elif a.report == "jsonl":
        with open(os.environ["OSPREY_METRIC_FILE"], "a") as f:
            f.write(json.dumps({"loss": loss, "epoch": epoch + 1}) + "\n")
    else:
        hypertune_log.append({"timestamp": time.time(), "trial": "0", "loss": str(loss),
                              "global_step": str(epoch), "checkpoint_path": ""})
        with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "w") as f:
            for m in hypertune_log[-100:]:
                f.write(json.dumps(m) + "\n")
    time.sleep(a.sleep * (5 if loss > a.slow_above else 1))
open(os.path.join(a.trial_dir, "finished"), "w").close()
