"""Every shell command in README.md and docs/ runs as written (issue 48).

doc_examples_match keeps the C++ listings equal to programs ctest runs; this does the same for
the commands a reader pastes. Each ```sh block on those pages follows a marker line
    <!-- run: {JSON} -->        (or just <!-- run -->)
saying how a test runs it; output samples are fenced ```text, files ```toml / ```python ... .
An unmarked sh block, an unlabeled fence or a marker that does not parse is an error.

  --check ROOT                  every page: markers present and well formed (fast, no commands)
  --run ROOT BUILD PAGE         runs PAGE's blocks in order and checks their exit codes/outputs

Where commands run: one scratch folder per page that looks like the repository root (a link to
each top-level entry, `build` to BUILD), so `scripts/...`, `examples/...` and `build/...` work
and what the commands write (ckpts, osprey_run, studies) lands in the scratch folder. PATH starts
with BUILD/cli (the reader's `osprey`), and OSPREY_MAX_STEPS (README.md, "Environment"; default
4 here, --max-steps) caps every training and evaluation epoch, so a documented 50-epoch command
runs in seconds while running every line of it. Each block runs under `bash -eo pipefail`,
then `wait` for what it started with `&`.

Marker keys (all optional):
  skip: "why"            not run; the reason is printed. Only for commands that are this CI
                         itself or take hours (CI builds, fuzzes and sanitizes separately).
  replace: [[a, b], ..]  text replacements first: another host's address -> loopback, an absolute
                         path -> the scratch folder. In b, {port1}..{port9} are free ports and
                         {tmp} the scratch folder.
  hosts: [[[a, b], ..], ..]  the block runs once per entry, all at once, each with its own
                         replacements too: a cluster written once to be run "on each host".
  lines: [{..}, ..]      each command line (a backslash joins lines) runs on its own, in order,
                         with its own keys (replace, hosts, exit, output, before, after, skip).
  each_line: true        every command line runs at once as its own process (one line per host).
  group: "name"          consecutive blocks of one group start together and end together.
  background: true       in a group: a server, stopped with SIGTERM once the others have ended.
  before / after: "sh"   set-up and tear-down around the block (after runs even on failure).
  exit: N                expected exit code (default 0); output: "text" that must be printed.
  timeout: seconds       default 600.
  env: {"NAME": "value"} more environment; "OSPREY_MAX_STEPS": "" lifts the cap for a program
                         that checks what it learned.
  file: "NAME"           (on a non-sh fence) written to NAME in the scratch folder, for later
                         commands of the page.
  copy: {"NAME": "path"} copies a repository file to NAME first: the reader's own program that
                         the page stands in for (examples/tune_train.py as train.py).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\n(.*?)^```\n", re.S | re.M)
MARKER = re.compile(r"^<!-- run(?::\s*(.*?))?\s*-->$")
KEYS = {"skip", "replace", "hosts", "lines", "each_line", "group", "background", "before", "after",
        "exit", "output", "timeout", "env", "file", "copy"}
LINE_KEYS = {"replace", "hosts", "exit", "output", "before", "after", "skip", "env"}
SHELL_LANGS = {"sh", "bash", "shell", "console"}


def pages(root):
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def blocks(root, page):
    """(line, language, text, options) for each fence; options None when no marker precedes it."""
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()]
        line = before.count("\n") + 1
        last = before.rstrip("\n").rsplit("\n", 1)[-1]  # a marker is the line before the fence
        marker = MARKER.match(last)
        opts = None
        where = f"{page.relative_to(root)}:{line}"
        if marker:
            try:
                opts = json.loads(marker.group(1)) if marker.group(1) else {}
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: the run marker is not JSON: {e}") from None
            if not isinstance(opts, dict):
                raise ValueError(f"{where}: the run marker must hold a JSON object")
        out.append((line, m.group(1), m.group(2), opts))
    return out


def check(root):
    problems, counts = [], {"run": 0, "skip": 0}
    for page in pages(root):
        rel = page.relative_to(root)
        try:
            found = blocks(root, page)
        except ValueError as e:
            problems.append(str(e))
            continue
        for line, lang, _, opts in found:
            where = f"{rel}:{line}"
            if lang == "":
                problems.append(f"{where}: a fence needs a language: sh for commands, text for "
                                "output a command prints")
            elif lang in SHELL_LANGS:
                if opts is None:
                    problems.append(f"{where}: a shell block needs a <!-- run ... --> marker "
                                    "(tests/run_doc_commands.py says how)")
                    continue
                unknown = set(opts) - KEYS
                if unknown:
                    problems.append(f"{where}: unknown marker keys {sorted(unknown)}")
                for spec in opts.get("lines", []):
                    if set(spec) - LINE_KEYS:
                        problems.append(f"{where}: unknown line keys {sorted(set(spec) - LINE_KEYS)}")
                if "skip" in opts and not str(opts["skip"]).strip():
                    problems.append(f"{where}: skip needs a reason")
                counts["skip" if "skip" in opts else "run"] += 1
            elif opts is not None and set(opts) - {"file"}:
                problems.append(f"{where}: a {lang} block takes only the file key")
    for p in problems:
        print(p)
    print(f"run_doc_commands --check: {counts['run']} block(s) run, {counts['skip']} skipped, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


def logical_lines(text):
    """Command lines of a block: continuation lines joined, comment-only and blank lines left out."""
    out, cur = [], ""
    for raw in text.splitlines():
        cur += raw + "\n"
        if raw.endswith("\\"):
            continue
        if cur.strip() and not cur.lstrip().startswith("#"):
            out.append(cur)
        cur = ""
    if cur.strip():
        out.append(cur)
    return out


class Page:
    def __init__(self, root, build, page, max_steps):
        self.root, self.build, self.page = root, build, page
        self.rel = page.relative_to(root)
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="osprey-docs-"))
        for entry in root.iterdir():
            if entry.name not in ("build", ".git"):
                (self.tmp / entry.name).symlink_to(entry)
        (self.tmp / "build").symlink_to(build)
        self.ports = {}
        for i in range(1, 10):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.ports[f"{{port{i}}}"] = str(s.getsockname()[1])
        self.env = dict(os.environ)
        self.env["PATH"] = f"{build / 'cli'}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["OSPREY_MAX_STEPS"] = str(max_steps)
        # mpirun refuses root without these; CI runs as root.
        self.env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        self.env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        self.failures = 0

    def fill(self, s):
        s = s.replace("{tmp}", str(self.tmp))
        for k, v in self.ports.items():
            s = s.replace(k, v)
        return s

    def replaced(self, text, pairs):
        for a, b in pairs:
            if a not in text:
                raise ValueError(f"{self.rel}: replace: '{a}' is not in the block")
            text = text.replace(a, self.fill(b))
        return text

    def start(self, script, label, timeout, env):
        out = open(self.tmp / f".log-{len(os.listdir(self.tmp))}", "w+")
        full = f"set -eo pipefail\n{script}\nwait\n"
        proc = subprocess.Popen(["bash", "-c", full], cwd=self.tmp, env={**self.env, **env}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        return {"proc": proc, "out": out, "label": label, "deadline": time.time() + timeout,
                "script": script}

    @staticmethod
    def stop(run, sig=signal.SIGTERM):
        try:
            os.killpg(run["proc"].pid, sig)
        except ProcessLookupError:
            pass

    def finish(self, run, expect_exit, expect_output):
        run["out"].seek(0)
        text = run["out"].read()
        rc = run["proc"].returncode
        ok = rc == expect_exit and (not expect_output or expect_output in text)
        why = ""
        if rc != expect_exit:
            why = f"exit code {rc}, expected {expect_exit}"
        elif not ok:
            why = f"the output lacks {expect_output!r}"
        if not ok:
            self.failures += 1
            print(f"FAIL {run['label']}: {why}\n--- command:\n{run['script']}--- output (last 40 "
                  "lines):")
            print("\n".join(text.splitlines()[-40:]))
        return ok

    def run_step(self, runs):
        """runs: (script, label, opts) started together; background ones stop when the rest end."""
        t0 = time.time()
        started = [(self.start(s, label, o.get("timeout", 600), o.get("env", {})), o)
                   for s, label, o in runs]
        fg = [r for r in started if not r[1].get("background")]
        while any(r["proc"].poll() is None for r, _ in fg):
            for r, _ in fg:
                if r["proc"].poll() is None and time.time() > r["deadline"]:
                    print(f"FAIL {r['label']}: still running after its time limit; stopped")
                    self.stop(r, signal.SIGKILL)
            time.sleep(0.1)
        for r, o in started:
            if o.get("background") and r["proc"].poll() is None:
                self.stop(r)
                try:
                    r["proc"].wait(30)
                except subprocess.TimeoutExpired:
                    self.stop(r, signal.SIGKILL)
                    r["proc"].wait()
                continue
            r["proc"].wait()
        ok = True
        for r, o in started:
            if o.get("background"):
                continue
            ok = self.finish(r, o.get("exit", 0), o.get("output")) and ok
        labels = ", ".join(r["label"] for r, _ in started)
        print(f"{'ok  ' if ok else 'FAIL'} {labels} ({time.time() - t0:.1f} s)")
        sys.stdout.flush()

    def variants(self, text, opts, label):
        """The (script, label, opts) runs of one block or line: one per host, else one."""
        text = self.replaced(text, opts.get("replace", []))
        hosts = opts.get("hosts")
        if not hosts:
            return [(text, label, opts)]
        return [(self.replaced(text, h), f"{label} (host {i})", opts) for i, h in enumerate(hosts)]

    def wrap(self, script, opts):
        before, after = opts.get("before"), opts.get("after")
        if before:
            script = f"{before}\n{script}"
        if after:
            script = f"trap '{after}' EXIT\n{script}"
        return script

    def steps(self):
        """The page's blocks as steps: lists of runs that start together."""
        steps, group = [], None
        for line, lang, text, opts in blocks(self.root, self.page):
            label = f"{self.rel}:{line}"
            if opts is None or lang not in SHELL_LANGS:
                if opts and "file" in opts:
                    steps.append(("file", opts["file"], text))
                continue
            for name, src in opts.get("copy", {}).items():
                steps.append(("copy", name, src))
            if "skip" in opts:
                print(f"skip {label}: {opts['skip']}")
                continue
            if "lines" in opts:
                cmds = logical_lines(text)
                if len(cmds) != len(opts["lines"]):
                    raise ValueError(f"{label}: {len(cmds)} command lines, {len(opts['lines'])} "
                                     "line specs")
                for i, (cmd, spec) in enumerate(zip(cmds, opts["lines"])):
                    if "skip" in spec:
                        print(f"skip {label} line {i + 1}: {spec['skip']}")
                        continue
                    merged = {**{k: v for k, v in opts.items() if k in ("timeout", "env")}, **spec}
                    runs = self.variants(cmd, merged, f"{label} line {i + 1}")
                    steps.append([(self.wrap(s, merged), lab, o) for s, lab, o in runs])
                group = None
                continue
            if opts.get("each_line"):
                text = self.replaced(text, opts.get("replace", []))
                runs = [(self.wrap(c, opts), f"{label} line {i + 1}", opts)
                        for i, c in enumerate(logical_lines(text))]
            else:
                runs = [(self.wrap(s, opts), lab, o) for s, lab, o in self.variants(text, opts, label)]
            if opts.get("group") and opts["group"] == group and isinstance(steps[-1], list):
                steps[-1].extend(runs)
            else:
                steps.append(runs)
            group = opts.get("group")
        return steps

    def run(self):
        try:
            for step in self.steps():
                if isinstance(step, tuple):
                    kind, name, what = step
                    if kind == "file":
                        (self.tmp / name).write_text(what)
                    else:
                        shutil.copy(self.root / what, self.tmp / name)
                    continue
                self.run_step(step)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
        print(f"run_doc_commands {self.rel}: {self.failures} failure(s)")
        return 1 if self.failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="ROOT")
    ap.add_argument("--run", nargs=3, metavar=("ROOT", "BUILD", "PAGE"))
    ap.add_argument("--max-steps", type=int, default=4)
    a = ap.parse_args()
    if a.check:
        return check(pathlib.Path(a.check).resolve())
    root, build, page = (pathlib.Path(p).resolve() for p in a.run)
    return Page(root, build, page, a.max_steps).run()


if __name__ == "__main__":
    sys.exit(main())
