#!/usr/bin/env bash
# Writes the fuzz targets' seed corpora (fuzz/corpus/<name>) from real files: NumPy's np.save,
# IDX and CSV files as Fashion-MNIST and pandas users have them, safetensors written by Python
# and by osprey, models and studies written by the osprey command itself (osprey train, osprey
# tune with each tuner), and the TOML spaces and models of the tests. The seeds are committed; run
# this again (from the repository root, after a build) when a format changes.
#   bash fuzz/make_corpus.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
osprey=$build/cli/osprey
out=fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"/{safetensors,idx,npy,csv,model_config,toml,tuner_state}

/usr/bin/python3 - "$out" <<'PY'
import json, os, struct, sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(7)

# NumPy's own writer: several dtypes, ranks, byte orders, Fortran order, format version 2.
arrays = {
    "f32_2d": rng.standard_normal((3, 4)).astype("<f4"),
    "f64_1d": rng.standard_normal(5),
    "u8_3d": rng.integers(0, 255, (2, 3, 3), dtype=np.uint8),
    "i64_labels": rng.integers(0, 10, 6, dtype=np.int64),
    "i32_be": rng.integers(-5, 5, 4).astype(">i4"),
    "f32_fortran": np.asfortranarray(rng.standard_normal((2, 3)).astype("<f4")),
    "scalar": np.float32(1.5),
    "empty": np.zeros((0, 3), dtype="<f4"),
    "bool": np.array([True, False, True]),
}
for name, a in arrays.items():
    np.save(os.path.join(out, "npy", name + ".npy"), a)
with open(os.path.join(out, "npy", "v2.npy"), "wb") as f:
    np.lib.format.write_array(f, arrays["f32_2d"], version=(2, 0))

# IDX as MNIST ships it: big-endian sizes, unsigned bytes; and the other element types.
def idx(path, code, a):
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, code, a.ndim))
        for d in a.shape:
            f.write(struct.pack(">I", d))
        f.write(a.tobytes())
idx(os.path.join(out, "idx", "images_u8.idx"), 0x08, rng.integers(0, 255, (3, 4, 4), dtype=np.uint8))
idx(os.path.join(out, "idx", "labels_u8.idx"), 0x08, rng.integers(0, 10, 5, dtype=np.uint8))
idx(os.path.join(out, "idx", "f32.idx"), 0x0D, rng.standard_normal((2, 3)).astype(">f4"))
idx(os.path.join(out, "idx", "i32.idx"), 0x0C, rng.integers(-9, 9, (4,)).astype(">i4"))
idx(os.path.join(out, "idx", "f64.idx"), 0x0E, rng.standard_normal((2, 2)).astype(">f8"))
idx(os.path.join(out, "idx", "i16.idx"), 0x0B, rng.integers(-9, 9, (3,)).astype(">i2"))
idx(os.path.join(out, "idx", "i8.idx"), 0x09, rng.integers(-9, 9, (3,)).astype("i1"))

# CSV: the first byte is the options byte of fuzz_csv.cpp (1 header, 2 label by name, 4 label
# by index, 8 the last column, 16 integer labels, 32 missing values allowed, 64 ';').
csvs = [
    (1 | 2 | 16, "a,b,label\n1.5,2,0\n-3e2,4.25,1\n0,0,2\n"),
    (1 | 4 | 8, "x1,x2,y\n1,2,0.5\n3,4,1.5\n"),
    (0, "1,2,3\n4,5,6\n"),
    (1 | 32 | 2, "f,label\n,1\n2.5,\n"),
    (1 | 64 | 2, "p;q;label\n1;2;3\n4;5;6\n"),
    (1 | 2 | 16, "\"quoted, name\",label\n1,2\n"),
    (1, "a,b\r\n1,2\r\n3,4\r\n"),
]
for i, (opt, text) in enumerate(csvs):
    with open(os.path.join(out, "csv", f"seed_{i}.csv"), "wb") as f:
        f.write(bytes([opt]) + text.encode())

# safetensors as the reference writer lays it out (no osprey checksum): header padded to 8.
def safetensors(path, tensors, metadata=None):
    header, offset, blobs = {}, 0, []
    for name, (code, a) in tensors.items():
        b = a.tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
safetensors(os.path.join(out, "safetensors", "python_mixed.safetensors"), {
    "w": ("F32", rng.standard_normal((2, 3)).astype("<f4")),
    "b": ("F64", rng.standard_normal(3)),
    "i": ("I64", np.arange(4, dtype="<i8")),
    "m": ("U8", np.arange(3, dtype=np.uint8)),
    "h": ("F16", np.arange(2, dtype="<f2")),
}, {"format": "pt"})
safetensors(os.path.join(out, "safetensors", "python_empty.safetensors"), {})
safetensors(os.path.join(out, "safetensors", "python_zero_size.safetensors"),
            {"z": ("F32", np.zeros((0, 2), dtype="<f4"))})
PY

# What osprey writes: config.json of the built-in MLP and CNN, and small models of the same
# shapes trained a step (config.json, model.safetensors with its checksum, optimizer.safetensors)
# on a few rows of 8x8 data, so the seeds stay a few KB.
/usr/bin/python3 - "$tmp" <<'PY'
import numpy as np, sys
rng = np.random.default_rng(1)
np.save(sys.argv[1] + "/x.npy", rng.standard_normal((32, 28, 28)).astype("<f4"))
np.save(sys.argv[1] + "/x8.npy", rng.standard_normal((32, 8, 8)).astype("<f4"))
np.save(sys.argv[1] + "/y.npy", rng.integers(0, 10, 32).astype("<i8"))
PY
for m in mlp cnn; do
  "$osprey" train --model $m --data "$tmp/x.npy,$tmp/y.npy" --epochs 1 --steps-per-epoch 1 \
    --batch-size 16 --output "$tmp/$m" >/dev/null
  cp "$tmp/$m/config.json" "$out/model_config/$m.json"
  /usr/bin/python3 - "$tmp/$m/config.json" "$tmp/small_$m.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["model"]
c["config"]["build_input_shape"] = [None, 8, 8]
for layer in c["config"]["layers"]:
    k = layer["config"]
    if k.get("units", 10) != 10: k["units"] = 4
    if "filters" in k: k["filters"] = 2
    if "target_shape" in k: k["target_shape"] = [8, 8, 1]
json.dump(c, open(sys.argv[2], "w"))
PY
  "$osprey" train --model "$tmp/small_$m.json" --data "$tmp/x8.npy,$tmp/y.npy" --epochs 1 \
    --steps-per-epoch 1 --batch-size 16 --output "$tmp/small_$m" >/dev/null
  cp "$tmp/small_$m.json" "$out/model_config/small_$m.json"
  cp "$tmp/small_$m/model.safetensors" "$out/safetensors/osprey_$m.safetensors"
  cp "$tmp/small_$m/optimizer.safetensors" "$out/safetensors/osprey_${m}_optimizer.safetensors"
done
cp tests/data/*.toml "$out/toml/"
cp tests/data/keras3_mnist_mlp.json "$out/model_config/"  # Keras 3's model.to_json()

# Studies: each tuner's oracle.json (first byte: the oracle fuzz_tuner_state builds, 0 random,
# 1 bayesian, 2 hyperband, 3 ASHA) with its trials inline, and trial.json files (first byte 0x80).
i=0
for tuner in random bayesian hyperband asha; do
  "$osprey" tune --command "echo osprey-metric loss={x}.5 epoch=1; echo osprey-metric loss=0.{x} epoch=2" --metric loss --space tests/data/tune_command_space.toml \
    --tuner "$tuner" --max-trials 4 --epochs 2 --seed 3 --quiet --directory "$tmp/$tuner" >/dev/null 2>&1
  study=$(dirname "$(find "$tmp/$tuner" -name oracle.json | head -1)")
  /usr/bin/python3 - "$study" "$out/tuner_state" "$i" "$tuner" <<'PY'
import glob, json, os, sys
study, out, pick, tuner = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
state = json.load(open(os.path.join(study, "oracle.json")))
trials = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(study, "trial_*", "trial.json")))]
inline = dict(state, trials=trials)
open(os.path.join(out, f"oracle_{tuner}.bin"), "wb").write(bytes([pick]) + json.dumps(inline).encode())
for n, t in enumerate(trials[:2]):
    open(os.path.join(out, f"trial_{tuner}_{n}.bin"), "wb").write(bytes([0x80]) + json.dumps(t).encode())
PY
  i=$((i + 1))
done
# The services: sequences of real requests, each framed as fuzz_rpc.h reads them
# ([method][length, 2 bytes little-endian][payload]).
mkdir -p "$out"/{ps_service,oracle_service,worker_service} "$tmp/py"
protoc -I src --python_out="$tmp/py" src/osprey/distribute/ps/ps.proto src/osprey/tune/oracle.proto
PYTHONPATH="$tmp/py" /usr/bin/python3 - "$out" <<'PY'
import json, os, struct, sys
import numpy as np
from osprey.distribute.ps import ps_pb2 as ps
from osprey.tune import oracle_pb2 as orc
out = sys.argv[1]

def frame(calls):
    b = b""
    for method, msg in calls:
        p = msg.SerializeToString()
        b += bytes([method]) + struct.pack("<H", len(p)) + p
    return b

def tensor(name, a, dtype="float32"):
    return ps.TensorData(name=name, shape=list(a.shape), dtype=dtype, data=a.astype("<f4").tobytes())

w = np.arange(6, dtype="<f4").reshape(2, 3) / 10
b = np.zeros(3, dtype="<f4")
sgd = json.dumps({"class_name": "SGD", "config": {"learning_rate": 0.1}})
adam = json.dumps({"class_name": "Adam", "config": {"learning_rate": 0.001}})
REGISTER, PULL, PUSH, STATS, CHECKPOINT = range(5)
sync = ps.RegisterRequest(variables=[tensor("dense/kernel", w), tensor("dense/bias", b)],
                          optimizer=sgd, mode="sync", replicas_to_aggregate=1, total_replicas=2,
                          overwrite=True)
asyn = ps.RegisterRequest(variables=[tensor("dense/kernel", w)], state=[tensor("bn/mean", b)],
                          optimizer=adam, mode="async",
                          staleness=ps.StalenessPolicyData(max_staleness=2, down_weight_beyond=True),
                          overwrite=True)
push = ps.PushRequest(step=0, share=1, weight=16, worker=0,
                      gradients=[tensor("dense/kernel", np.ones((2, 3))), tensor("dense/bias", np.ones(3))])
apush = ps.PushRequest(base_version=0, weight=8, gradients=[tensor("dense/kernel", np.ones((2, 3)))],
                       state=[tensor("bn/mean", np.ones(3))])
bf16 = ps.PushRequest(step=1, share=0, weight=4,
                      gradients=[ps.TensorData(name="dense/bias", shape=[3], dtype="bfloat16", data=b"\x80\x3f" * 3)])
seeds = {
    "register_sync": [(REGISTER, sync)],
    "sync_step": [(REGISTER, sync), (PULL, ps.PullRequest()), (PUSH, push), (STATS, ps.StatsRequest(reset=True))],
    "async_step": [(REGISTER, asyn), (PUSH, apush), (PULL, ps.PullRequest()), (CHECKPOINT, ps.CheckpointRequest())],
    "bf16_push": [(REGISTER, sync), (PUSH, bf16)],
}
for name, calls in seeds.items():
    open(os.path.join(out, "ps_service", name + ".bin"), "wb").write(frame(calls))

GET, SPACE, CREATE, UPDATE, END, HEARTBEAT = range(6)
space = json.dumps({"space": [{"class_name": "Int", "config": {"name": "units", "default": 8, "min_value": 8, "max_value": 64, "step": 8, "sampling": "linear"}}], "values": {}})
seeds = {
    "state": [(GET, orc.GetStateRequest())],
    "space": [(SPACE, orc.UpdateSpaceRequest(tuner_id="tuner0", hyperparameters_json=space))],
    "trial": [(CREATE, orc.CreateTrialRequest(tuner_id="tuner0")),
              (UPDATE, orc.UpdateTrialRequest(tuner_id="tuner0", trial_id="0000", epoch=0,
                                              metrics=[orc.Metric(name="val_loss", value=0.5)])),
              (HEARTBEAT, orc.HeartbeatRequest(tuner_id="tuner0", trial_id="0000")),
              (END, orc.EndTrialRequest(tuner_id="tuner0", trial_id="0000", status="completed"))],
    "failed": [(CREATE, orc.CreateTrialRequest(tuner_id="tuner1")),
               (END, orc.EndTrialRequest(tuner_id="tuner1", trial_id="0001", status="failed", message="boom"))],
}
for name, calls in seeds.items():
    open(os.path.join(out, "oracle_service", name + ".bin"), "wb").write(frame(calls))

# The worker's steps as the chief sends them: shares of a global batch of the MLP's 5 inputs and
# 3 outputs (fuzz_worker_service.cpp), then Ping and EndFit.
RUN, PING, END_FIT = range(3)
def step(n, share, rows):
    x = rng.standard_normal((rows, 5)).astype("<f4")
    y = rng.standard_normal((rows, 3)).astype("<f4")
    return ps.StepRequest(step=n, share=share, x=tensor("x", x), y=tensor("y", y))
rng = np.random.default_rng(5)
seeds = {
    "one_step": [(RUN, step(0, 0, 8))],
    "steps": [(RUN, step(0, 0, 8)), (RUN, step(1, 0, 8)), (PING, ps.PingRequest()), (RUN, step(2, 0, 4))],
    "end": [(RUN, step(0, 0, 8)), (END_FIT, ps.EndFitRequest()), (RUN, step(1, 0, 8))],
    "failed": [(PING, ps.PingRequest()), (END_FIT, ps.EndFitRequest(error="the chief's fit failed"))],
}
for name, calls in seeds.items():
    open(os.path.join(out, "worker_service", name + ".bin"), "wb").write(frame(calls))
PY
# A backup's training_state.json as BackupAndRestore writes it, from the target's own job (its
# first byte: 0 the file as is, 1 the state alone).
: >"$tmp/empty"  # one empty input: the target sets its job up, writes the seeds, returns
OSPREY_FUZZ_WRITE_SEEDS="$out/backup_state" "$build/fuzz/fuzz_backup_state_replay" "$tmp/empty" >/dev/null
find "$out" -type f | wc -l | xargs echo "make_corpus: seed files:"
du -sh "$out"
