#!/usr/bin/env bash
# osprey train on a model described in a file and on data that is not Fashion-MNIST (issue 26),
# each a tiny run on a learnable synthetic task (class = the sign of the first feature, or a
# bright versus a dark image), with the usage error of each bad value:
#   --model net.json (the model alone) + CSV data with --label-column and --test-data;
#   --model net.toml + a folder of x.npy/y.npy: the same model as the JSON one, config for config;
#   --model DIR (a folder osprey train saved) + an X.npy,Y.npy pair: the saved config is the
#   description's, field for field (fresh weights, the same architecture);
#   --model mlp + a folder of PNG images (written here by hand: zlib and struct), grayscale,
#   resized with --image-size 28x28: rows [28, 28, 1] that feed the prebuilt MLP as [28, 28];
#   a JSON model without an input shape + IDX files (gzip'd images, raw labels);
#   bad values: a missing --model file, malformed JSON and TOML (the file and the line), an
#   unknown layer class (the file and the field), a model whose input shape is not the data's (both
#   shapes), a model with too few outputs, an unknown --data-format, a CSV without the label
#   column, a missing --data file, a bad --image-size, and --label-column with NPY data.
# Usage: train_data_test.sh path/to/osprey
set -u
osprey=$1
python=/usr/bin/python3  # Debian's, with numpy (scripts/setup.sh --tests)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && tail -n 5 "$tmp/out"; failures=$((failures + 1)); }
# expect_accuracy LABEL MIN: the test accuracy the last run printed is at least MIN.
expect_accuracy() {
  local acc
  acc=$(sed -n 's/.*test accuracy: \([0-9.]*\).*/\1/p' "$tmp/out" | tail -n 1)
  [ -n "$acc" ] && awk -v a="$acc" -v m="$2" 'BEGIN { exit !(a >= m) }' ||
    fail "$1: test accuracy '${acc}' below $2"
}
# same_model A B: the "model" fields of two config.json files are equal.
same_model() {
  "$python" -c 'import json, sys
a, b = (json.load(open(p))["model"] for p in sys.argv[1:3])
sys.exit(a != b)' "$1" "$2"
}
# usage_error NAME MESSAGE ARGS...: osprey train ARGS exits 2 and prints MESSAGE.
usage_error() {
  local name=$1 message=$2
  shift 2
  "$osprey" train --output "" "$@" >"$tmp/out" 2>&1
  local rc=$?
  [ "$rc" = 2 ] || fail "$name: exit code $rc, expected 2"
  grep -qF -- "$message" "$tmp/out" || fail "$name: no '$message' in the output"
}

"$python" - "$tmp" <<'PY' || { echo "FAIL: cannot write the test data"; exit 1; }
import gzip, json, os, struct, sys, zlib
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)

def task(n):  # 4 features; the class is the sign of the first
    x = rng.normal(size=(n, 4)).astype("f4")
    return x, (x[:, 0] > 0).astype("i8")

x, y = task(400)
xt, yt = task(200)
for name, (a, b) in {"train": (x, y), "test": (xt, yt)}.items():
    with open(f"{d}/{name}.csv", "w") as f:
        f.write("f1,f2,y,f3,f4\n")
        for row, label in zip(a, b):
            f.write(f"{row[0]:.5f},{row[1]:.5f},{label},{row[2]:.5f},{row[3]:.5f}\n")
os.makedirs(f"{d}/arrays")
np.save(f"{d}/arrays/x.npy", x)
np.save(f"{d}/arrays/y.npy", y)
np.save(f"{d}/x_test.npy", xt)
np.save(f"{d}/y_test.npy", yt.astype("u1"))
with open(f"{d}/nolabel.csv", "w") as f:
    f.write("a,b\n1,2\n")

dense = lambda units, act: {"class_name": "Dense", "config": {"units": units, "activation": act}}
model = {"class_name": "Sequential", "config": {"build_input_shape": [None, 4],
         "layers": [dense(16, "relu"), dense(2, "softmax")]}}
json.dump(model, open(f"{d}/net.json", "w"), indent=1)
open(f"{d}/net.toml", "w").write("""# the model of net.json
[model]
class_name = "Sequential"
[model.config]
build_input_shape = [-1, 4]   # TOML has no null
[[model.config.layers]]
class_name = "Dense"
config = { units = 16, activation = "relu" }
[[model.config.layers]]
class_name = "Dense"
config = { units = 2, activation = "softmax" }
""")
open(f"{d}/unknown.toml", "w").write(open(f"{d}/net.toml").read().replace('"Dense"\nconfig = { units = 2', '"Dense2"\nconfig = { units = 2'))
open(f"{d}/bad.toml", "w").write("[model]\nclass_name = \n")
open(f"{d}/bad.json", "w").write('{"model": {\n  "class_name": "Sequential",,\n}}\n')
narrow = json.loads(json.dumps(model))
narrow["config"]["layers"][1]["config"]["units"] = 1
json.dump(narrow, open(f"{d}/narrow.json", "w"))
# No input shape: built for the data's rows.
json.dump({"class_name": "Sequential", "config": {"layers": [
    {"class_name": "Flatten"}, dense(8, "relu"), dense(2, "softmax")]}}, open(f"{d}/unbuilt.json", "w"))

def image(bright):  # 6x6 grey bytes around 220 or 35
    base = 220 if bright else 35
    return rng.integers(base - 30, base + 30, size=(6, 6)).astype("u1")

def png(path, pixels):  # 8-bit greyscale PNG, written by hand
    h, w = pixels.shape
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)
    chunk = lambda t, data: (struct.pack(">I", len(data)) + t + data
                             + struct.pack(">I", zlib.crc32(t + data) & 0xffffffff))
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

for split, n in (("images", 40), ("images_test", 20)):
    for cls in ("bright", "dark"):
        os.makedirs(f"{d}/{split}/{cls}")
        for i in range(n):
            png(f"{d}/{split}/{cls}/{i:03}.png", image(cls == "bright"))

def idx(path, a, compress):
    header = struct.pack(">BBBB", 0, 0, 0x08, a.ndim) + b"".join(struct.pack(">I", s) for s in a.shape)
    (gzip.open if compress else open)(path, "wb").write(header + a.tobytes())

for name, n in (("train", 200), ("t10k", 100)):
    labels = rng.integers(0, 2, size=n).astype("u1")
    idx(f"{d}/{name}-images-idx3-ubyte.gz", np.stack([image(l == 1) for l in labels]), True)
    idx(f"{d}/{name}-labels-idx1-ubyte", labels, False)
PY

fast=(--epochs 8 --batch-size 32 --lr 0.01)

# JSON model, CSV data.
"$osprey" train --model "$tmp/net.json" --data "$tmp/train.csv" --label-column y \
  --test-data "$tmp/test.csv" "${fast[@]}" --output "$tmp/csv_model" >"$tmp/out" 2>&1 || fail "csv run: exit code $?"
grep -q "data: $tmp/train.csv (csv): 400 training rows of \[4\], 200 test rows, 2 classes" "$tmp/out" ||
  fail "csv run: no data line"
expect_accuracy "csv run" 0.85

# TOML model, a folder of x.npy and y.npy (no test split: no test line, and a note).
"$osprey" train --model "$tmp/net.toml" --data "$tmp/arrays" "${fast[@]}" --output "$tmp/toml_model" \
  >"$tmp/out" 2>&1 || fail "toml/npy run: exit code $?"
grep -q "no test split" "$tmp/out" || fail "toml/npy run: no note that there is no test split"
same_model "$tmp/toml_model/config.json" "$tmp/csv_model/config.json" ||
  fail "toml/npy run: the TOML model's config differs from the JSON model's"

# A saved folder as the description, an X.npy,Y.npy pair (uint8 labels) as the test split.
"$osprey" train --model "$tmp/csv_model" --data "$tmp/arrays/x.npy,$tmp/arrays/y.npy" \
  --test-data "$tmp/x_test.npy,$tmp/y_test.npy" "${fast[@]}" --output "$tmp/npy_model" >"$tmp/out" 2>&1 ||
  fail "saved-folder/npy run: exit code $?"
expect_accuracy "saved-folder/npy run" 0.85
same_model "$tmp/npy_model/config.json" "$tmp/csv_model/config.json" ||
  fail "saved-folder run: the saved config is not the description"

# A folder of PNG images: grayscale, resized to 28x28, [28, 28, 1] fed to the prebuilt MLP.
"$osprey" train --model mlp --data "$tmp/images" --test-data "$tmp/images_test" --color-mode grayscale \
  --image-size 28x28 --epochs 10 --batch-size 16 --output "" >"$tmp/out" 2>&1 || fail "images run: exit code $?"
grep -q "(images): 80 training rows of \[28, 28\], 40 test rows, 2 classes" "$tmp/out" ||
  fail "images run: no data line"
expect_accuracy "images run" 0.9

# IDX files (gzip'd images, raw labels), a model built for the data's [6, 6] rows.
"$osprey" train --model "$tmp/unbuilt.json" \
  --data "$tmp/train-images-idx3-ubyte.gz,$tmp/train-labels-idx1-ubyte" \
  --test-data "$tmp/t10k-images-idx3-ubyte.gz,$tmp/t10k-labels-idx1-ubyte" "${fast[@]}" --output "" \
  >"$tmp/out" 2>&1 || fail "idx run: exit code $?"
grep -q "(idx): 200 training rows of \[6, 6\], 100 test rows, 2 classes" "$tmp/out" || fail "idx run: no data line"
expect_accuracy "idx run" 0.9

usage_error "missing model" "--model: must be mlp, cnn, gpt, lstm, or a model description file or folder. Received: '$tmp/missing.json'" \
  --model "$tmp/missing.json" --data "$tmp/arrays"
usage_error "malformed JSON" "osprey train: --model $tmp/bad.json:2:" --model "$tmp/bad.json" --data "$tmp/arrays"
usage_error "malformed TOML" "osprey train: --model $tmp/bad.toml:2:" --model "$tmp/bad.toml" --data "$tmp/arrays"
grep -q "invalid TOML" "$tmp/out" || fail "malformed TOML: no 'invalid TOML'"
usage_error "unknown layer" "osprey train: --model $tmp/unknown.toml: layers[1]: unknown layer class 'Dense2'" \
  --model "$tmp/unknown.toml" --data "$tmp/arrays"
usage_error "shape mismatch" \
  "the model ($tmp/net.json) takes inputs of shape [4], but --data $tmp/train-images-idx3-ubyte.gz,$tmp/train-labels-idx1-ubyte holds rows of shape [6, 6]" \
  --model "$tmp/net.json" --data "$tmp/train-images-idx3-ubyte.gz,$tmp/train-labels-idx1-ubyte"
usage_error "too few outputs" "the model ($tmp/narrow.json) outputs 1 classes, but the labels of --data $tmp/arrays go up to 1" \
  --model "$tmp/narrow.json" --data "$tmp/arrays"
usage_error "unknown format" "--data-format: parquet not in {auto,fashion_mnist,idx,npy,csv,images}" \
  --data "$tmp/arrays" --data-format parquet
usage_error "csv without the label column" "no column named \"label\"" --model "$tmp/net.json" --data "$tmp/nolabel.csv"
usage_error "missing data" "--data: File does not exist: $tmp/nope.csv" --data "$tmp/nope.csv"
usage_error "bad image size" "--image-size: must be HEIGHTxWIDTH, e.g. 64x64. Received: '28'" --data "$tmp/images" --image-size 28
usage_error "label column with npy" "--label-column is for CSV data; --data is npy" --data "$tmp/arrays" --label-column y

if [ "$failures" = 0 ]; then echo "train_data_test: all checks passed"; fi
[ "$failures" = 0 ]
