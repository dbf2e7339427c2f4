#!/usr/bin/env python3
"""Checks every #include "osprey/<module>/..." in src/ against DESIGN.md's level table.

A module may include only the modules the table allows, so the layering cannot rot and no
include cycle can form. Unknown modules are errors too: a new module must be added here.
Exit 0 when clean; otherwise prints each offending line (file:line: module -> module) and exits 1.
"""
import pathlib
import re
import sys

L0_2 = {"core", "tensor", "io", "autograd", "data", "precision", "comm"}
L3 = {"nn", "losses", "metrics", "optim"}
L4 = {"models", "quant"}
ALLOWED = {
    "core": set(),
    "tensor": {"core"},
    "io": {"core", "tensor"},
    "autograd": {"core", "tensor"},
    "data": {"core", "tensor"},
    "precision": {"core", "tensor"},
    "comm": {"core", "tensor"},
    **{m: L0_2 - {"data", "comm"} for m in L3},
    **{m: L0_2 - {"data", "comm"} | L3 for m in L4},
    "train": L0_2 - {"comm"} | L3 | L4,
    "distribute": L0_2 | L3 | L4 | {"train"},
    "tune": L0_2 | L3 | L4 | {"train", "distribute"},
    # ensemble sits above tune (Ensemble::from_tuner); tune never includes ensemble.
    "ensemble": L0_2 | L3 | L4 | {"train", "distribute", "tune"},
    "applications": L0_2 | L3 | L4 | {"train", "distribute"},
    # Test harnesses serve every module's tests; nothing in the library may include them.
    "testing": L0_2 | L3 | L4 | {"train", "distribute"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]osprey/([a-z_0-9]+)(/|\.h)')
TOP_LEVEL_HEADERS = {"version", "osprey"}  # osprey/version.h, the umbrella osprey/osprey.h


def main(root: pathlib.Path) -> int:
    errors = []
    src = root / "src" / "osprey"
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".cpp", ".in"} or not path.is_file():
            continue
        rel = path.relative_to(src)
        if len(rel.parts) < 2:
            continue  # top-level headers such as osprey.h may include anything
        module = rel.parts[0]
        is_test = path.stem.endswith("_test")
        if module not in ALLOWED:
            errors.append(f"{path}: module '{module}' is not in the level table of tests/check_layering.py")
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if target in TOP_LEVEL_HEADERS or target == module:
                continue
            if target == "testing" and is_test:
                continue
            if target not in ALLOWED.get(module, set()):
                errors.append(f"{path}:{lineno}: {module} may not include {target} ({line.strip()})")
    for e in errors:
        print(e)
    print(f"layering: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
