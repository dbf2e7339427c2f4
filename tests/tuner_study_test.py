#!/usr/bin/env python3
"""A distributed tuning study on loopback survives its workers and its chief being killed.

`osprey launch --tuners 2 -- osprey tune ...` runs a chief serving the oracle and two tuner
workers, one trial per process. While a trial is mid-way (two epochs reported), every worker
process is killed with SIGKILL: the launcher restarts them and the trial resumes from its last
epoch backup (the log says so). Once three trials have ended, the chief is killed with SIGKILL:
the launcher restarts it, it reloads its directory, and the workers, which retried their calls
meanwhile, carry on. The study must end with exactly the requested trials, all completed, no two
with the same values, and launch must exit 0.

usage: tuner_study_test.py OSPREY WORKDIR
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

MAX_TRIALS = 6


def trials(project):
    out = []
    for f in sorted(project.glob("trial_*/trial.json")):
        try:
            out.append(json.loads(f.read_text()))
        except (OSError, json.JSONDecodeError):
            pass  # being replaced (atomic rename): read it next time
    return out


def pids_with(var, value):
    """Processes whose environment has var=value (our launch's children)."""
    found = []
    needle = f"{var}={value}".encode()
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in env:
            found.append(int(d.name))
    return found


def wait_for(what, predicate, proc, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            sys.exit(f"FAIL: launch exited ({proc.returncode}) while waiting for {what}")
        time.sleep(0.1)
    proc.kill()
    sys.exit(f"FAIL: timed out waiting for {what}")


def main():
    osprey, work = sys.argv[1], pathlib.Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    project = work / "study" / "fmnist_mlp"
    log_path = work / "launch.log"
    env = dict(os.environ)
    env["OSPREY_ORACLE_LEASE_SECONDS"] = "4"
    # A unique marker in every process of this launch, to find and kill ours only.
    marker = f"tuner-study-{os.getpid()}"
    env["OSPREY_TEST_MARKER"] = marker
    cmd = [osprey, "launch", "--tuners", "2", "--max-restarts", "5", "--", osprey, "tune",
           "--tuner", "random", "--max-trials", str(MAX_TRIALS), "--epochs", "6",
           "--train-samples", "12000", "--val-samples", "500", "--directory", str(work / "study")]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            def running_with_two_epochs():
                for t in trials(project):
                    ex = t.get("executions")
                    if t.get("status") == "running" and ex and len(ex[0]) >= 2:
                        return True
                return False

            wait_for("a trial two epochs in", running_with_two_epochs, proc)
            workers = [p for p in pids_with("OSPREY_TEST_MARKER", marker)
                       if p in set(pids_with("OSPREY_TUNER_TRIALS_PER_PROCESS", "1"))]
            if not workers:
                sys.exit("FAIL: found no tuner worker process to kill")
            for p in workers:
                os.kill(p, signal.SIGKILL)
            print(f"killed the tuner workers {workers} mid-trial", flush=True)

            wait_for("three ended trials",
                     lambda: sum(t.get("status") in ("completed", "failed")
                                 for t in trials(project)) >= 3, proc)
            chiefs = [p for p in pids_with("OSPREY_TEST_MARKER", marker)
                      if p in set(pids_with("OSPREY_TUNER_ID", "chief"))]
            if len(chiefs) != 1:
                sys.exit(f"FAIL: expected one chief process, found {chiefs}")
            os.kill(chiefs[0], signal.SIGKILL)
            print(f"killed the chief {chiefs[0]}", flush=True)
            code = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log_path.read_text()
    print(text[-6000:])
    if code != 0:
        sys.exit(f"FAIL: launch exited with {code}")
    final = trials(project)
    statuses = [t["status"] for t in final]
    if len(final) != MAX_TRIALS or any(s != "completed" for s in statuses):
        sys.exit(f"FAIL: expected {MAX_TRIALS} completed trials, got {statuses}")
    values = {json.dumps(t["hyperparameters"]["values"], sort_keys=True) for t in final}
    if len(values) != MAX_TRIALS:
        sys.exit(f"FAIL: duplicate values among the trials: {len(values)} distinct")
    for needle in ("resumed from its backup", "osprey launch: chief 0 was killed by signal 9",
                   "restarting it", "is back"):
        if needle not in text:
            sys.exit(f"FAIL: the log lacks '{needle}'")
    print("OK: the study ended with", MAX_TRIALS, "completed trials after killing the workers "
          "and the chief")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
