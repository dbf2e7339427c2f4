#!/usr/bin/env python3
"""Issue 43's figures, osprey beside PyTorch in one run on a quiet machine: each measurement runs
--reps times, the frameworks interleaved, and the medians and their ratios are printed as
Markdown rows for bench/RESULTS.md. Peak RSS is each process's own (wait4's ru_maxrss).
  python3 bench/gpt_figures.py [--build build] [--reps 3] [--torch2 .venv-torch2/bin/python]
      [--only 1,2,3,4,5,6] [--full]
--full adds figure 1's whole 2,000-step training runs (osprey and PyTorch 1.13, once each) for the
validation loss; without it figure 1 times steps only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--torch", default="/usr/bin/python3")
# PyTorch 2.x: scripts/bench_venv.sh makes this venv; "" leaves it out.
ap.add_argument("--torch2", default=".venv-torch2/bin/python" if os.path.exists(
    ".venv-torch2/bin/python") else "")
ap.add_argument("--only", default="1,2,3,4,5,6")
ap.add_argument("--full", action="store_true")
a = ap.parse_args()
only = {int(x) for x in a.only.split(",")}
osprey_bin = lambda name: os.path.join(a.build, "bench", name)
pythons = [("torch 1.13", a.torch)] + ([("torch 2.x", a.torch2)] if a.torch2 else [])


def run(cmd):
    """The last JSON line the command prints, with its peak RSS in MiB."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out[-2000:]}")
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    r = json.loads(line)
    r["rss_mib"] = usage.ru_maxrss / 1024
    return r


def medians(cmds, key):
    """{label: (median of key, median rss)} over reps, the commands interleaved."""
    got = {label: [] for label, _ in cmds}
    for _ in range(a.reps):
        for label, cmd in cmds:
            got[label].append(run(cmd))
    return {label: (statistics.median(r[key] for r in rs), statistics.median(r["rss_mib"] for r in rs))
            for label, rs in got.items()}


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def gpt_cmds(extra, torch_extra=None):
    cmds = [("osprey", [osprey_bin("bench_gpt")] + extra)]
    for label, py in pythons:
        cmds.append((label, [py, "bench/torch_gpt.py"] + (torch_extra or extra)))
    return cmds


def compare(title, cmds, key, unit, higher_better=True):
    m = medians(cmds, key)
    base = m["osprey"]
    for label, (v, rss) in m.items():
        ratio = "" if label == "osprey" else (
            f"{base[0] / v:.2f}x" if higher_better else f"{v / base[0]:.2f}x")
        rss_ratio = "" if label == "osprey" else f"{base[1] / rss:.2f}"
        row(title, label, f"{v:,.1f} {unit}", ratio, f"{rss:,.0f}", rss_ratio)


if 1 in only:
    print("\nFigure 1: nanoGPT's CPU configuration (4 layers, 4 heads, n_embd 128, block 64, batch 12)")
    row("figure", "framework", "median", "osprey's advantage", "peak RSS MiB", "osprey RSS / theirs")
    row(*["---"] * 6)
    compare("1: training tokens/s", gpt_cmds(["--time-iters", "40"]), "tokens_per_s", "tokens/s")
    if a.full:
        for label, cmd in [("osprey", [osprey_bin("bench_gpt")]),
                           ("torch 1.13", [a.torch, "bench/torch_gpt.py"])]:
            r = run(cmd)
            row("1: 2,000 steps", label, f"val loss {r['val_loss']}",
                f"{r['tokens_per_s']:,.0f} tokens/s, {r['train_s']} s training", f"{r['rss_mib']:,.0f}", "")
if 2 in only:
    print("\nFigure 2: nanoGPT's Shakespeare GPU shape (6 layers, 6 heads, n_embd 384, block 256), batch 12")
    row("figure", "framework", "median", "osprey's advantage", "peak RSS MiB", "osprey RSS / theirs")
    row(*["---"] * 6)
    shape = ["--n-layer", "6", "--n-head", "6", "--n-embd", "384", "--block", "256", "--time-iters", "3"]
    compare("2: training tokens/s", gpt_cmds(shape), "tokens_per_s", "tokens/s")
if 3 in only:
    print("\nFigure 3: attention forward+backward, one layer, 4 heads, head dim 64, causal")
    row("T", "osprey tiled ms", "PyTorch 1.13 ms (materialized)", "osprey's advantage",
        "osprey peak RSS MiB", "PyTorch peak RSS MiB")
    row(*["---"] * 6)
    for t in (512, 1024, 2048, 4096, 8192):
        common = ["--t", str(t), "--heads", "4", "--d", "64", "--causal", "--reps", "2"]
        o = run([osprey_bin("bench_attention"), "--tiled-only"] + common)
        p = run([a.torch, "bench/torch_attention.py"] + common)
        row(t, o["tiled_ms"], p["ms"], f"{p['ms'] / o['tiled_ms']:.2f}x", f"{o['rss_mib']:,.0f}",
            f"{p['rss_mib']:,.0f}")
if 4 in only:
    print("\nFigure 4: 2-layer RNN language models (hidden 512, sequence 128, batch 32, embedding 128)")
    row("figure", "framework", "median", "osprey's advantage", "peak RSS MiB", "osprey RSS / theirs")
    row(*["---"] * 6)
    for cell in ("lstm", "gru"):
        args = ["--model", cell, "--units", "512", "--n-layer", "2", "--block", "128", "--batch", "32",
                "--time-iters", "3"]
        compare(f"4: {cell} tokens/s", gpt_cmds(args), "tokens_per_s", "tokens/s")
if 5 in only:
    print("\nFigure 5: generation, 255 tokens after a 1-token prompt (6 layers, 6 heads, n_embd 384, block 256)")
    r = run([osprey_bin("bench_gpt"), "--iters", "0", "--eval-iters", "1", "--n-layer", "6", "--n-head", "6",
             "--n-embd", "384", "--block", "256", "--generate", "255", "--int8"])
    row("with the key/value cache", f"{r['cached_tokens_per_s']:.1f} tokens/s")
    row("without (re-run the prefix)", f"{r['uncached_tokens_per_s']:.1f} tokens/s")
    row("speed-up", f"{r['speedup']:.2f}x")
    row("int8 weights, with the cache", f"{r['int8_cached_tokens_per_s']:.1f} tokens/s")
    row("int8 weights, without", f"{r['int8_uncached_tokens_per_s']:.1f} tokens/s")
    row("int8 / float32 (with the cache)", f"{r['int8_over_float32_cached']:.2f}x")
if 6 in only:
    print("\nFigure 6: text classifiers, synthetic ids of length 200, vocabulary 20,000, batch 32")
    row("figure", "framework", "median", "osprey's advantage", "peak RSS MiB", "osprey RSS / theirs")
    row(*["---"] * 6)
    for kind in ("bilstm", "transformer"):
        cmds = [("osprey", [osprey_bin("bench_text_classifier"), "--model", kind])]
        cmds += [(label, [py, "bench/torch_text_classifier.py", "--model", kind]) for label, py in pythons]
        compare(f"6: {kind} ms/step", cmds, "ms_per_step", "ms", higher_better=False)
