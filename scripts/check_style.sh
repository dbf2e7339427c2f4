#!/usr/bin/env bash
# The style gate CI runs (.ci/run): the tree must be clang-format clean, and clang-tidy must find
# nothing in the C++ files changed since the commit named in .ci/tidy-base.
#   scripts/check_style.sh format        every tracked .h/.cpp against .clang-format
#   scripts/check_style.sh tidy [BUILD]  .clang-tidy's checks, warnings as errors, on the changed
#                                        files (BUILD/compile_commands.json; default build/)
#   scripts/check_style.sh fix           reformat every tracked file in place
# clang-tidy over all ~350 sources takes ~40 minutes on 2 cores, so CI tidies what changed: a
# changed .cpp, and the .cpp beside a changed header (the header's warnings are reported through
# it). .ci/tidy-base moves forward to the commit a stop started from, when that stop lands.
# Versions are pinned (clang 14, Debian 12) because formatting differs between clang-format
# releases, and a gate that flips with the tool's version is noise.
set -euo pipefail
cd "$(dirname "$0")/.."
format=clang-format-14
tidy=clang-tidy-14

git rev-parse --git-dir >/dev/null 2>&1 || {
  echo "check_style: $(pwd) is not a git checkout; it checks the files git tracks" >&2
  exit 2
}
tracked_sources() { git ls-files '*.h' '*.cpp' | grep -v '^tests/layering_fixture/'; }

case "${1:-}" in
  format)
    mapfile -t files < <(tracked_sources)
    # One run over every file; each difference is a "FILE:LINE:COL: error:" line.
    mapfile -t bad < <("$format" --dry-run --Werror "${files[@]}" 2>&1 |
      sed -n -E 's/^([^:]+):[0-9]+:[0-9]+: error:.*/\1/p' | sort -u)
    if ((${#bad[@]})); then
      echo "check_style: ${#bad[@]} file(s) differ from .clang-format (scripts/check_style.sh fix):"
      printf '  %s\n' "${bad[@]}"
      "$format" --dry-run "${bad[0]}" 2>&1 | head -20
      exit 1
    fi
    echo "check_style: ${#files[@]} files clang-format clean"
    ;;
  fix)
    tracked_sources | xargs "$format" -i
    ;;
  tidy)
    build=${2:-${OSPREY_BUILD_DIR:-build}}
    [[ -f "$build/compile_commands.json" ]] || {
      echo "check_style: $build/compile_commands.json is missing; build first" >&2
      exit 2
    }
    base=$(tr -d '[:space:]' <.ci/tidy-base)
    git cat-file -e "$base^{commit}" 2>/dev/null || {
      echo "check_style: .ci/tidy-base names '$base', not a commit of this repository" >&2
      exit 2
    }
    # A file moved without a change (R100) has nothing new to tidy.
    mapfile -t changed < <(git diff --name-status -M --diff-filter=AMR "$base" HEAD -- '*.h' '*.cpp' |
      awk '$1 != "R100" { print $NF }' | grep -v '^tests/layering_fixture/' || true)
    declare -A sources=()
    headers=()
    for f in "${changed[@]}"; do
      case "$f" in
        *.cpp) sources["$f"]=1 ;;
        *.h)
          headers+=("$(pwd)/$f")
          [[ -f "${f%.h}.cpp" ]] && sources["${f%.h}.cpp"]=1
          ;;
      esac
    done
    # A unity build (OSPREY_UNITY_BUILD) lists its batches, not the sources in them: give each
    # source its batch's command, in a database of our own.
    db=$(mktemp -d)
    trap 'rm -rf "$db"' EXIT
    python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
out = []
for e in entries:
    if "/Unity/unity_" not in e["file"]:
        out.append(e)
        continue
    for src in re.findall(r'^#include "([^"]+)"', open(e["file"]).read(), re.M):
        out.append(dict(e, file=src, command=e["command"].replace(e["file"], src)))
json.dump(out, open(sys.argv[2], "w"), indent=1)
PY
    # Only files the build compiles (a bench or example left out of this build is skipped).
    todo=()
    for f in "${!sources[@]}"; do
      grep -q "\"file\": \"$(pwd)/$f\"" "$db/compile_commands.json" && todo+=("$f")
    done
    if ((${#todo[@]} == 0)); then
      echo "check_style: no changed C++ sources since $base"
      exit 0
    fi
    # -Wno-everything: the build's own -Wpedantic -Werror, read by clang, would fail on what gcc
    # accepts (compound literals in float_types.h); compiler warnings are the build's job.
    # Warnings count in the changed files and changed headers only, not in every header they pull in.
    filter=$(printf '%s\n' "${headers[@]}" | sed 's/[.[\*^$()+?{|]/\\&/g' | paste -sd'|')
    echo "check_style: clang-tidy on ${#todo[@]} changed source(s) since ${base:0:12}"
    log=$db/tidy.log
    { printf '%s\n' "${todo[@]}" | sort | xargs -P"$(nproc)" -n1 "$tidy" -p "$db" --quiet --extra-arg=-Wno-everything \
      --warnings-as-errors='*' --header-filter="^(${filter:-\$^})\$" >"$log" 2>&1; } || true
    grep -v -E '^[0-9]+ warnings?( and [0-9]+ errors?)? generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' \
      "$log" || true
    if grep -q -E ': (warning|error):' "$log"; then
      echo "check_style: clang-tidy found the problems above" >&2
      exit 1
    fi
    echo "check_style: clang-tidy clean"
    ;;
  *)
    echo "usage: scripts/check_style.sh format | tidy [BUILD_DIR] | fix" >&2
    exit 2
    ;;
esac
