#!/usr/bin/env python3
"""Checks every #include "osprey/..." of the tree against one level table (LEVELS below).

- In src/osprey/<module>/, a module includes only the modules its row allows, so the layering
  cannot rot and no include cycle can form. An unknown module is an error: add its row here.
- Everywhere (src/osprey, cli/, bench/, fuzz/, examples/), a header under a module's internal/
  is included only from inside that module: internal/ holds what is not installed (gRPC and
  protobuf types). cli/, bench/, fuzz/ and examples/ sit above every level and may include any
  module's public headers; the few that measure or fuzz an internal component are listed in
  EXCEPTIONS, and an exception that matches no include is an error, so that list cannot rot.
- docs/architecture.md shows LEVELS between the layering-table markers; a table there that
  differs from the generated one is an error (--write-docs rewrites it).

  check_layering.py [ROOT]               check ROOT (default: this repository); 1 on a violation
  check_layering.py --markdown           print the table as markdown
  check_layering.py --write-docs [ROOT]  put the table into ROOT/docs/architecture.md
  check_layering.py --self-test FIXTURE  check FIXTURE; pass when it reports exactly the lines
                                         of FIXTURE/expected_violations.txt
"""
import argparse
import difflib
import pathlib
import re
import sys

_BELOW_NN = ["core", "tensor", "io", "autograd", "precision"]  # levels 0-2 but data, comm
_L3 = ["nn", "losses", "metrics", "optim"]
_L4 = ["models", "quant"]
_TO_5 = _BELOW_NN + ["data", "comm"] + _L3 + _L4 + ["train"]  # levels 0-5
ANYTHING = None  # the "may include" of the folders above every level
# (level, modules, what they hold, the modules they may include). None as level: outside the levels.
LEVELS = [
    (0, ["core"], "errors and check macros, dtypes, Shape, Device, RNG streams, the thread pool, "
     "fault injection", []),
    (1, ["tensor"], "Tensor, Storage, allocator, the op API, kernels: `reference/` (the oracle) "
     "and `cpu/` (oneDNN, primitive cache)", ["core"]),
    (2, ["io"], "safetensors, JSON helpers, CRC32C, atomic files and folders", ["core", "tensor"]),
    (2, ["autograd"], "Variable, graph nodes, backward, `ops/<family>.cpp`", ["core", "tensor"]),
    (2, ["data"], "Dataset and its transforms, IDX and CSV readers, Fashion-MNIST",
     ["core", "tensor"]),
    (2, ["precision"], "dtype policies, float8 recipe", ["core", "tensor"]),
    (2, ["comm"], "Communicator (in-process, MPI, Gloo) and the choice of MPI or Gloo; call "
     "checks; deadlines; the rendezvous store; the gRPC transport (`rpc/`: secure servers, "
     "clients, status mapping)", ["core", "tensor"]),
    (3, _L3, "layers with named weights, losses, metrics, optimizers, schedules, loss scaling",
     _BELOW_NN),
    (4, _L4, "Network, Sequential, functional models, saving; int8 and float8 layer swaps",
     _BELOW_NN + _L3),
    (5, ["train"], "Model (compile, fit, evaluate, predict), Trainer, the Strategy interface, "
     "callbacks, progress bar", _BELOW_NN + ["data"] + _L3 + _L4),
    (6, ["distribute"], "the strategies, one subfolder per concept: `data_parallel/` (Mirrored, "
     "MultiWorkerMirrored, CentralStorage, replicas, gradient reduction), `model_parallel/` (mesh, "
     "layouts, sharded layers), `pipeline/` (schedules, executor), `ps/` (parameter shards, their "
     "gRPC services and clients, the coordinator), `cluster/` (cluster resolution, the worker "
     "group); OneDevice, the strategy scope and the Keras distribution API at the top", _TO_5),
    (6, ["tune"], "HyperParameters, oracles (random, Bayesian, Hyperband, ASHA), tuners, "
     "hypermodels, the oracle service (gRPC) and the metric report format", _TO_5),
    # applications builds the tunable MLP `osprey tune` searches over a tune::HyperParameters.
    (7, ["applications"], "the built-in Fashion-MNIST models (MLP, CNN, the tunable MLP)",
     _TO_5 + ["distribute", "tune"]),
    # ensemble sits above tune (Ensemble::from_tuner); tune never includes ensemble.
    (7, ["ensemble"], "Ensemble, combiners (average, Nelder-Mead, random, greedy), XGBoost "
     "members; `Ensemble::from_tuner` builds one from a study", _TO_5 + ["distribute", "tune"]),
    # Test harnesses serve every module's tests (*_test files); the library never includes them.
    (None, ["testing"], "test harnesses: finite-difference gradients, layer conformance, helpers; "
     "included by `*_test` files only", _TO_5 + ["distribute"]),
    (8, ["cli/", "bench/", "fuzz/", "examples/"], "the `osprey` command (one file per subcommand), "
     "benchmarks, fuzz targets, examples", ANYTHING),
]
ALLOWED = {m: set(inc) for _, mods, _, inc in LEVELS if inc is not ANYTHING for m in mods}
LEVEL_OF = {m: lvl for lvl, mods, _, inc in LEVELS if inc is not ANYTHING for m in mods}
OUTSIDE = [d.rstrip("/") for _, mods, _, inc in LEVELS if inc is ANYTHING for d in mods]

# (file, internal header it may include, why). Only for a file outside the header's module.
EXCEPTIONS = [
    ("bench/bench_ps.cpp", "osprey/distribute/ps/internal/ps_client.h",
     "measures PsClient's pull + push over gRPC against the shard in-process: what RPC costs"),
    ("bench/bench_soak.cpp", "osprey/distribute/ps/internal/ps_client.h",
     "soaks `osprey ps` with PsClient threads pulling and pushing for as long as --seconds says"),
    ("fuzz/fuzz_worker_service.cpp", "osprey/distribute/ps/internal/ps_client.h",
     "plays the chief with PsClient (registers the model on the ps), then feeds the worker "
     "hostile bytes"),
]
# What --self-test uses instead: one exception that holds, one that matches no include.
FIXTURE_EXCEPTIONS = [
    ("bench/measures_client.cpp", "osprey/distribute/ps/internal/ps_client.h", "fixture: holds"),
    ("fuzz/gone.cpp", "osprey/distribute/ps/internal/ps_client.h", "fixture: matches nothing"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](osprey/[^">]+)[">]')
DOCS = pathlib.Path("docs/architecture.md")
BEGIN, END = "<!-- layering-table:begin -->", "<!-- layering-table:end -->"
ORDER = [m for _, mods, _, _ in LEVELS for m in mods]  # table order, for listing modules


def describe(allowed):
    """The "may include" cell: the exact set, listed, or as levels 0-k with additions and removals
    when that names fewer modules."""
    if not allowed:
        return "std only"
    best = ", ".join(sorted(allowed, key=ORDER.index))
    best_cost = len(allowed)
    for k in range(1, max(lvl for lvl in LEVEL_OF.values() if lvl is not None) + 1):
        prefix = {m for m, lvl in LEVEL_OF.items() if lvl is not None and lvl <= k}
        plus = sorted(allowed - prefix, key=ORDER.index)
        minus = sorted(prefix - allowed, key=ORDER.index)
        if 2 + len(plus) + len(minus) < best_cost:  # "levels 0-k" reads as two names
            best_cost = 2 + len(plus) + len(minus)
            best = f"levels 0-{k}" + "".join(", " + m for m in plus)
            if minus:
                best += (", but not " if plus else " but not ") + ", ".join(minus)
    return best


def markdown():
    rows = ["| level | module | holds | may include |", "| --- | --- | --- | --- |"]
    for lvl, mods, holds, inc in LEVELS:
        cell = ("public headers of any module; `internal/` ones only as listed in EXCEPTIONS of "
                "tests/check_layering.py") if inc is ANYTHING else describe(set(inc))
        level = "-" if lvl is None else str(lvl)
        rows.append(f"| {level} | {', '.join(f'`{m}`' for m in mods)} | {holds} | {cell} |")
    return "\n".join(rows) + "\n"


def table_errors():
    """The table itself: known modules only, each including only lower levels (so no cycle can
    form; the closure below says so again should a row ever break that)."""
    errors = []
    for m, allowed in ALLOWED.items():
        for a in sorted(allowed - set(ALLOWED)):
            errors.append(f"tests/check_layering.py: {m} may include '{a}', which has no row")
        for a in sorted(allowed & set(ALLOWED)):
            if LEVEL_OF[m] is not None and (LEVEL_OF[a] is None or LEVEL_OF[a] >= LEVEL_OF[m]):
                errors.append(f"tests/check_layering.py: {m} (level {LEVEL_OF[m]}) may include "
                              f"{a}, which is not below it")
    reach = {m: set(a) & set(ALLOWED) for m, a in ALLOWED.items()}
    for _ in ALLOWED:  # transitive closure: few modules, so the plain way
        reach = {m: r.union(*(reach[a] for a in r)) for m, r in reach.items()}
    errors += [f"tests/check_layering.py: {m} includes itself through {', '.join(sorted(reach[m]))}"
               for m in ALLOWED if m in reach[m]]
    return errors


def sources(root):
    """(path, its module or outside folder, whether it is under src/osprey) for each source."""
    src = root / "src" / "osprey"
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.suffix in {".h", ".cpp", ".cc", ".in"} and path.is_file() and len(rel.parts) >= 2:
            yield path, rel.parts[0], True  # top-level headers (osprey.h) may include anything
    for folder in OUTSIDE:
        for path in sorted((root / folder).rglob("*")):
            inner = path.relative_to(root / folder).parts
            if any(p.startswith(("build", ".")) for p in inner[:-1]):
                continue  # build outputs (examples/consumer/build) are not sources
            if path.suffix in {".h", ".cpp", ".cc"} and path.is_file():
                yield path, folder, False


def check(root, exceptions):
    listed = {(f, h) for f, h, _ in exceptions}
    errors, unused, unknown = table_errors(), set(listed), set()
    for path, module, in_src in sources(root):
        rel = path.relative_to(root).as_posix()
        if in_src and module not in ALLOWED:
            if module not in unknown:
                unknown.add(module)
                errors.append(f"src/osprey/{module}: module '{module}' has no row in the level "
                              "table of tests/check_layering.py")
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            header = m.group(1)
            parts = header.split("/")
            if len(parts) < 3:
                continue  # osprey/version.h, the umbrella osprey/osprey.h
            target, where = parts[1], f"{rel}:{lineno}"
            if target not in ALLOWED:
                errors.append(f"{where}: unknown module '{target}' ({line.strip()})")
                continue
            ok_for_tests = target == "testing" and path.stem.endswith("_test")
            if in_src and target != module and target not in ALLOWED[module] and not ok_for_tests:
                errors.append(f"{where}: {module} may not include {target} ({line.strip()})")
            if "internal" in parts[2:-1] and not (in_src and target == module):
                if (rel, header) in listed:
                    unused.discard((rel, header))
                else:
                    errors.append(f"{where}: {target}'s internal/ included from outside "
                                  f"src/osprey/{target}/ ({line.strip()})")
    for f, h in sorted(unused):
        errors.append(f"{f}: exception for {h} matches no include; remove it from "
                      "tests/check_layering.py")
    docs = root / DOCS
    # A root without docs/architecture.md (a checkout of the sources only) has no table to compare.
    if docs.is_file():
        text = docs.read_text(encoding="utf-8")
        if BEGIN not in text or END not in text:
            errors.append(f"{DOCS}: no {BEGIN} ... {END} around the level table")
        else:
            shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
            if shown != markdown():
                diff = difflib.unified_diff(shown.splitlines(), markdown().splitlines(),
                                            str(DOCS), "tests/check_layering.py", lineterm="")
                errors.append(f"{DOCS}: the level table differs from tests/check_layering.py's; "
                              "run `python3 tests/check_layering.py --write-docs`\n" +
                              "\n".join("    " + d for d in diff))
    return errors


def write_docs(root):
    docs = root / DOCS
    text = docs.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{docs}: no {BEGIN} ... {END} to write the table between")
        return 1
    head, rest = text.split(BEGIN, 1)
    docs.write_text(f"{head}{BEGIN}\n{markdown()}{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print(f"{docs}: level table written")
    return 0


def self_test(fixture):
    """The fixture must fail for each reason it holds: an unlisted or a missing report fails."""
    reported = {e.split("\n")[0] for e in check(fixture, FIXTURE_EXCEPTIONS)}
    lines = (fixture / "expected_violations.txt").read_text(encoding="utf-8").splitlines()
    expected = {s for s in lines if s.strip() and not s.startswith("#")}
    for e in sorted(expected - reported):
        print(f"not reported: {e}")
    for e in sorted(reported - expected):
        print(f"reported but not expected: {e}")
    good = expected == reported and expected
    print(f"layering self-test: {len(expected & reported)} of {len(expected)} expected violations "
          f"reported, {len(reported - expected)} unexpected")
    return 0 if good else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--markdown", action="store_true", help="print the level table as markdown")
    mode.add_argument("--write-docs", action="store_true",
                      help="write the table into docs/architecture.md")
    mode.add_argument("--self-test", metavar="FIXTURE", type=pathlib.Path,
                      help="check FIXTURE against FIXTURE/expected_violations.txt")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(), end="")
        return 0
    if args.write_docs:
        return write_docs(args.root.resolve())
    if args.self_test:
        return self_test(args.self_test.resolve())
    errors = check(args.root.resolve(), EXCEPTIONS)
    for e in errors:
        print(e)
    print(f"layering: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
