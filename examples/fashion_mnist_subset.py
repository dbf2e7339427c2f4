#!/usr/bin/env python3
"""Writes the first rows of Fashion-MNIST as uncompressed IDX files, for examples run small in CI.

    fashion_mnist_subset.py OUT_DIR [TRAIN_ROWS [TEST_ROWS [SOURCE_DIR]]]

OUT_DIR/fashion-mnist/ gets {train,t10k}-{images-idx3,labels-idx1}-ubyte with the first
TRAIN_ROWS (default 1200) and TEST_ROWS (default 200) rows of the real files in SOURCE_DIR
(default: the Debian package dataset-fashion-mnist). Point OSPREY_DATA_DIR at OUT_DIR and
datasets::fashion_mnist::load() reads the subset.
"""
import gzip
import pathlib
import struct
import sys


def subset(src: pathlib.Path, dst: pathlib.Path, rows: int) -> None:
    raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    ndim = raw[3]  # IDX magic: 0, 0, dtype, number of dimensions
    dims = list(struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim]))
    if rows > dims[0]:
        sys.exit(f"{src}: holds {dims[0]} rows, {rows} asked for")
    row_bytes = 1
    for d in dims[1:]:
        row_bytes *= d  # ubyte: one byte per value
    start = 4 + 4 * ndim
    dims[0] = rows
    dst.write_bytes(raw[:4] + struct.pack(f">{ndim}I", *dims) +
                    raw[start:start + rows * row_bytes])


def main() -> None:
    if not 2 <= len(sys.argv) <= 5:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1]) / "fashion-mnist"
    train_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
    test_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    source = pathlib.Path(sys.argv[4] if len(sys.argv) > 4 else "/usr/share/datasets/fashion-mnist")
    out.mkdir(parents=True, exist_ok=True)
    for prefix, rows in (("train", train_rows), ("t10k", test_rows)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{prefix}-{kind}-ubyte"
            src = source / f"{name}.gz"
            subset(src if src.exists() else source / name, out / name, rows)


if __name__ == "__main__":
    main()
