#!/usr/bin/env python3
"""osprey report's pages in a real browser: headless Chromium (Debian's chromium) loads them.

Two pages: a fresh tuner study's (osprey tune, three trials of two epochs) and a run-shaped
folder's (that study as tune/, the manifest osprey ensemble wrote for the cli_ensemble_out
fixture, a run.json as osprey run writes it, a retrained member's history.json). For each: no
console message at all (the page has no script, and its Content-Security-Policy turns any attempt
to fetch something into a console error), the <svg> plots of each section counted, the trials'
table complete. A screenshot of each goes to OUT (a non-empty 1280-wide PNG), for CI to keep. The
console check is itself checked: a copy of the page with a script that throws must fail it.
Chromium runs with --no-sandbox (CI runs as root) and with every background fetch off and host
names unresolvable, so it reaches no network.

Usage: report_chromium_test.py OSPREY ENSEMBLE_DIR OUT
"""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys

OSPREY, ENSEMBLE_DIR, OUT = sys.argv[1:4]
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--disable-breakpad", "--metrics-recording-only",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
    "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
]
CONSOLE = re.compile(r":CONSOLE[(:]|Uncaught")


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(cmd, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    fail("chromium is not installed: scripts/setup.sh --tests installs Debian's chromium package")


def load(browser, page, *extra):
    """Chromium on page with extra flags: (stdout, the console lines of its log)."""
    profile = os.path.join(OUT, "profile")
    p = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra,
                        "file://" + os.path.abspath(page)],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail(f"chromium exited {p.returncode} on {page}:\n{p.stderr[-3000:]}")
    return p.stdout, [line for line in p.stderr.splitlines() if CONSOLE.search(line)]


class Sections(html.parser.HTMLParser):
    """Counts, per <section id>, its <svg class="plot"> elements and its table rows."""

    def __init__(self):
        super().__init__()
        self.section, self.plots, self.rows, self.absent = None, {}, {}, set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
            self.plots[self.section], self.rows[self.section] = 0, 0
            if a.get("class") == "absent":
                self.absent.add(self.section)
        elif tag == "svg" and self.section and "plot" in (a.get("class") or "").split():
            self.plots[self.section] += 1
        elif tag == "tr" and self.section:
            self.rows[self.section] += 1

    def handle_endtag(self, tag):
        if tag == "section":
            self.section = None


def check_page(browser, page, plots, absent, trial_rows, screenshot, height):
    dom, console = load(browser, page, "--dump-dom")
    if console:
        fail(f"{page}: console messages:\n" + "\n".join(console))
    s = Sections()
    s.feed(dom)
    if s.plots != plots:
        fail(f"{page}: plots per section {s.plots}, expected {plots}")
    if s.absent != absent:
        fail(f"{page}: sections noted as absent {sorted(s.absent)}, expected {sorted(absent)}")
    if s.rows["trials"] != trial_rows + 1:
        fail(f"{page}: the trials table has {s.rows['trials'] - 1} rows, expected {trial_rows}")
    _, console = load(browser, page, f"--screenshot={screenshot}", f"--window-size=1280,{height}")
    if console:
        fail(f"{page}: console messages while taking the screenshot:\n" + "\n".join(console))
    with open(screenshot, "rb") as f:
        png = f.read()
    if len(png) < 1000 or png[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{screenshot}: not a PNG ({len(png)} bytes)")
    width, height = struct.unpack(">II", png[16:24])
    if width != 1280:
        fail(f"{screenshot}: {width}x{height}, expected 1280 wide")


def make_run_folder(study, run_dir):
    """A folder shaped as osprey run leaves it, from real artefacts where the test has them."""
    shutil.copytree(study, os.path.join(run_dir, "tune"))
    os.makedirs(os.path.join(run_dir, "ensemble"))
    shutil.copy(os.path.join(ENSEMBLE_DIR, "ensemble.json"), os.path.join(run_dir, "ensemble"))
    with open(os.path.join(ENSEMBLE_DIR, "ensemble.json")) as f:
        members = [m["name"] for m in json.load(f)["members"]]

    def stage(name, start, precision, accuracy):
        return {"row": {"stage": name, "what": f"{name} <stage>", "test_accuracy": accuracy,
                        "samples_per_second": 5000.0 - 1000 * start / 20, "size_bytes": 1200000,
                        "seconds": 10.0},
                "notes": {"started_at": start, "precision": precision}}

    stages = {"tune": stage("tune", 0.0, "float32", 0.70),
              "retrain": stage("retrain", 17.0, "float32", 0.74),
              "ensemble": stage("ensemble", 55.0, "float32", 0.76),
              "quantize": stage("quantize", 58.0, "int8", 0.75)}
    stages["ensemble"]["notes"]["members"] = [
        {"name": m, "weight": 1.0 / len(members), "test_accuracy": 0.7} for m in members]
    with open(os.path.join(run_dir, "run.json"), "w") as f:
        json.dump({"version": 1, "elapsed_seconds": 60.5, "stages": stages,
                   "options": {"budget_seconds": 60.0, "seed": 42, "members": 1,
                               "dtype_policy": "auto", "data": ""}}, f)
    history = {"format": "osprey-history", "version": 1, "epochs": [
        {"epoch": e, "metrics": {"loss": 1.0 / (e + 1), "accuracy": 0.5 + 0.1 * e}}
        for e in range(3)]}
    os.makedirs(os.path.join(run_dir, "retrain", "member_0"))
    with open(os.path.join(run_dir, "retrain", "member_0", "history.json"), "w") as f:
        json.dump(history, f)


def main():
    browser = chromium()
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    study_root = os.path.join(OUT, "study")
    run([OSPREY, "tune", "--tuner", "random", "--hypermodel", "mlp", "--max-trials", "3",
         "--epochs", "2", "--train-samples", "256", "--val-samples", "128",
         "--directory", study_root, "--overwrite"])
    out = run([OSPREY, "report", study_root])  # the project folder is found just below
    study_page = os.path.join(study_root, "report.html")
    if f"report: {study_page}" not in out:
        fail(f"osprey report printed {out!r}")
    check_page(browser, study_page, {"curves": 2, "trials": 2, "ensemble": 0, "stages": 0},
               {"ensemble", "stages"}, 3, os.path.join(OUT, "study.png"), 2000)

    run_dir = os.path.join(OUT, "run")
    make_run_folder(os.path.join(study_root, "fmnist_hyper_mlp"), run_dir)
    run_page = os.path.join(OUT, "run_report.html")
    run([OSPREY, "report", run_dir, "--output", run_page])
    # Curves: the retrained member's and the best trial's, loss and accuracy each.
    check_page(browser, run_page, {"curves": 4, "trials": 2, "ensemble": 1, "stages": 2}, set(), 3,
               os.path.join(OUT, "report.png"), 3600)  # the whole page

    # The console check can fail: a script that throws is caught (blocked by the page's policy,
    # or run and throwing, either is a console message).
    with open(study_page) as f:
        broken = f.read().replace("</body>", '<script>throw new Error("x")</script></body>')
    broken_page = os.path.join(OUT, "broken.html")
    with open(broken_page, "w") as f:
        f.write(broken)
    _, console = load(browser, broken_page, "--dump-dom")
    if not console:
        fail("a page whose script throws showed no console message: the check cannot fail")
    shutil.rmtree(os.path.join(OUT, "profile"), ignore_errors=True)
    print("report_chromium_test: all checks passed")


main()
