#!/usr/bin/env python3
"""Kill test: kill -9 `run -o`, bundle builds, `matrix run`/`resume` and `tune`/`tune --continue` at file
events and at random times, and check that nothing is lost, duplicated or left behind.

Each command is started in its own process group and killed with SIGKILL, either the whole group or
(for about a third of the kills) the orchestrator alone, which leaves its workers to notice by
themselves. A kill lands either when a file event is seen (polled every 5 ms: a staging directory, a
result file, a matrix row, a tuning-cache line, a bundle's temporary directory appearing) or at a
random moment of the command's expected run time. After every kill the script checks what the kill
left (the output is absent, the previous complete result or the new one, never half-written; no
process of the killed command is alive 10 s later), then lets the command (or its resume/continue)
finish and checks again: every matrix row and tuning iteration exactly once, finished rows unchanged,
and no staging or temporary file of the dead process left behind.

`concurrency` (issue 34) adds, one per cycle in turn: a directory made at `run -o` during the run, SIGHUP
to a measuring run, two `tune --continue` at once after a kill, two `matrix resume` at once after a kill -9
of the orchestrator alone during long calls, and SIGINT/SIGTERM/SIGHUP to `tune` or `matrix`.

Usage: scripts/kill-test.py [--kills 50] [--seed 1] [--commands run,bundle,matrix,tune,concurrency]
                            [--work DIR] [--keep]
Environment: TRTMC_BIN (default target/release/trtmc-bench), KILLS, SEED, COMMANDS (the same as the
flags; a flag wins). The matrix needs python3 with the onnxruntime wheel (its reference backend).
Exits 1 when any check fails, listing each failure with its kill number. Not a unit test: minutes.
"""
import argparse
import glob
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_CATALOG = os.path.join(ROOT, "crates/cli/tests/catalog")
# Every process a command starts inherits this variable: the script finds survivors by it.
TAG_ENV = "TRTMC_KILL_TEST_TAG"
POLL_S = 0.005
SURVIVOR_GRACE_S = 10.0
# Names a process gives its temporary files and directories (pid last): <x>.tmp-PID, .tmp-KEY-PID,
# .tmp-tune-KEY-PID, .old-KEY-PID, .<name>.staging-PID.
TEMPORARY = re.compile(r"(\.tmp-|^\.old-|\.staging-)")
ALL_COMMANDS = ["run", "bundle", "matrix", "tune", "concurrency"]


def log(msg):
    print(msg, flush=True)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def temporaries(root):
    """Paths under `root` whose names mark them as a process's temporary (staging, .tmp-, .old-)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if TEMPORARY.search(name):
                found.append(os.path.relpath(os.path.join(dirpath, name), root))
        dirnames[:] = [d for d in dirnames if not TEMPORARY.search(d)]
    return sorted(found)


def tagged_processes(tag):
    """(pid, command line) of every live process whose environment carries `tag`."""
    needle = f"{TAG_ENV}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            if needle not in env:
                continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            found.append((int(entry), cmd))
        except OSError:
            continue
    return found


class Stats:
    """What happened to one command over its kills."""

    def __init__(self, name):
        self.name = name
        self.kills = 0
        self.at_event = {}
        self.at_random = 0
        self.orchestrator_only = 0
        self.missed = 0  # the command ended before the planned kill (not counted as a kill)
        self.violations = []
        self.notes = []  # what is not a violation but worth knowing
        self.leftovers_found = 0  # kills after which temporaries of the dead process were found
        self.leftovers_kept = 0  # … and the next command that met them did not remove them
        self.seconds = 0.0
        self.cycles = 0

    def violation(self, kill, what):
        self.violations.append((kill, what))
        log(f"  VIOLATION [{self.name} kill {kill}] {what}")


class Scenario:
    """One command under test. Subclasses say how to start it, which file events to kill at, and what
    must hold after a kill and after the command finishes."""

    name = ""
    events = []

    def __init__(self, bin_path, work, rng, stats):
        self.bin = bin_path
        self.work = work
        self.rng = rng
        self.stats = stats
        self.expected_s = 5.0
        self.tag_counter = 0

    # --- starting and killing -------------------------------------------------------------------

    def env(self, tag):
        env = dict(os.environ)
        env["TRTMC_TEST"] = "1"
        env.pop("TRTMC_MANIFEST_ROOT", None)
        env[TAG_ENV] = tag
        return env

    def new_tag(self):
        self.tag_counter += 1
        return f"{os.path.basename(self.work)}-{self.name}-{self.tag_counter}"

    def start(self, args, tag, logname, extra_env=None):
        env = self.env(tag)
        env.update(extra_env or {})
        out = open(os.path.join(self.work, logname), "ab")
        out.write(f"\n$ {' '.join(args)}\n".encode())
        out.flush()
        return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True), out

    def finish(self, args, logname, timeout=900, extra_env=None):
        """Runs `args` to its end; returns (exit code, its output)."""
        tag = self.new_tag()
        proc, out = self.start(args, tag, logname, extra_env)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()
        self.reap_survivors(tag, None, quiet=True)
        with open(os.path.join(self.work, logname), "rb") as f:
            text = f.read().decode(errors="replace")
        return proc.returncode, text[-4000:]

    def kill(self, args, kill_no, logname, extra_env=None, share=1.0):
        """Starts `args` and kills it as planned: at a random moment of the first `share` of an
        uninterrupted command's time, or at a file event. Returns the plan's description, or None when
        the command ended before the kill."""
        tag = self.new_tag()
        at_event = self.rng.random() < 0.5 and self.events
        group = self.rng.random() >= 0.33
        if at_event:
            event = self.rng.choice(self.events)
            predicate = self.event_predicate(event)
            plan = f"at {event}"
        else:
            event = None
            delay = self.rng.uniform(0.02, max(0.05, self.expected_s * share * 0.95))
            plan = f"at {delay:.2f} s"
        proc, out = self.start(args, tag, logname, extra_env)
        started = time.monotonic()
        limit = max(60.0, self.expected_s * 4)
        while proc.poll() is None:
            elapsed = time.monotonic() - started
            if event and elapsed > limit:
                # The event never came: the kill lands at a moment of no particular meaning.
                event = None
                plan = f"at {elapsed:.2f} s (its event never came)"
                delay = elapsed
            if (predicate() if event else elapsed >= delay) or elapsed > limit:
                try:
                    if group:
                        os.killpg(proc.pid, signal.SIGKILL)
                    else:
                        os.kill(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break
            time.sleep(POLL_S)
        proc.wait()
        out.close()
        killed = proc.returncode == -signal.SIGKILL
        if not killed:
            self.stats.missed += 1
            self.reap_survivors(tag, None, quiet=True)
            return None
        self.stats.kills += 1
        if event:
            self.stats.at_event[event] = self.stats.at_event.get(event, 0) + 1
        else:
            self.stats.at_random += 1
        if not group:
            self.stats.orchestrator_only += 1
        who = "group" if group else "orchestrator only"
        label = " ".join(a for a in args[1:4] if a in ("run", "matrix", "resume", "tune", "--continue"))
        log(f"  kill {kill_no}: {label} {plan} ({who}), after "
            f"{time.monotonic() - started:.2f} s")
        self.reap_survivors(tag, kill_no)
        return plan

    def reap_survivors(self, tag, kill_no, quiet=False):
        """Waits up to SURVIVOR_GRACE_S for the processes of `tag` to end; kills and reports the rest."""
        deadline = time.monotonic() + SURVIVOR_GRACE_S
        alive = tagged_processes(tag)
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = tagged_processes(tag)
        for pid, cmd in alive:
            if not quiet:
                self.stats.violation(kill_no, f"process {pid} of the killed command still runs "
                                              f"{SURVIVOR_GRACE_S:.0f} s later: {cmd[:160]}")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def snapshot(self, where):
        """The temporaries now under `where` (a set of relative paths)."""
        return set(temporaries(where)) if os.path.isdir(where) else set()

    def leftovers(self, kill_no, where, before_kill, after_kill):
        """Counts the temporaries a kill left under `where` and reports any the next command (which
        has just finished) did not remove. Temporaries already there before the kill were reported
        by the kill that left them."""
        left = after_kill - before_kill
        if left:
            self.stats.leftovers_found += 1
        remaining = sorted(self.snapshot(where) - before_kill)
        if remaining:
            if left & set(remaining):
                self.stats.leftovers_kept += 1
            self.stats.violation(kill_no, f"left behind after the next command finished in {where}: "
                                          f"{', '.join(remaining[:6])}"
                                          f"{' …' if len(remaining) > 6 else ''}")

    def appeared(self, pattern, before=None):
        """A predicate: a path matching `pattern` exists that was not in `before`."""
        before = set(before or ())
        return lambda: any(p not in before for p in glob.glob(pattern))


class RunOutput(Scenario):
    """`run -o R` on the test catalog's test-sleep profile; R must always be absent, the previous
    complete result or the new complete one."""

    name = "run -o"
    events = ["staging dir created", "result.json staged", "observations staged"]

    def setup(self):
        self.out = os.path.join(self.work, "R")
        self.previous = None
        self.cycle = 0

    def args(self):
        return [self.bin, "run", "--manifest-root", TEST_CATALOG, "--model", "test-sleep",
                "--set", "request.sleep_us=2000", "--iterations", "100", "--warmup", "5",
                "-o", self.out, "-q"]

    def event_predicate(self, event):
        staged = os.path.join(self.work, ".R.staging-*")
        before = set(glob.glob(staged))
        if event == "staging dir created":
            return self.appeared(staged, before)
        if event == "result.json staged":
            return self.appeared(os.path.join(staged, "result.json"),
                                 {os.path.join(b, "result.json") for b in before})
        return self.appeared(os.path.join(staged, "*", "observations.jsonl"))

    def complete(self, kill_no, when):
        """Checks R is a complete result; returns the digest of its result.json."""
        try:
            doc = read_json(os.path.join(self.out, "result.json"))
            if not str(doc.get("schema", "")).startswith("trtmc.benchmark-run/"):
                raise ValueError(f"schema {doc.get('schema')!r}")
            for case in doc["cases"]:
                if case.get("status") != "completed":
                    continue
                obs = os.path.join(self.out, case["dir"], "observations.jsonl")
                with open(obs, encoding="utf-8") as f:
                    lines = sum(1 for line in f if line.strip())
                want = case["measurement"]["observations"]
                if lines != want:
                    raise ValueError(f"{case['dir']}: {lines} observation lines, result.json says {want}")
            if not os.path.isfile(os.path.join(self.out, "report.html")):
                raise ValueError("no report.html")
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.stats.violation(kill_no, f"{when}: R is half-written: {e}")
            return None
        return digest(os.path.join(self.out, "result.json"))

    def calibrate(self):
        started = time.monotonic()
        code, text = self.finish(self.args(), "run.log")
        self.expected_s = time.monotonic() - started
        if code != 0:
            sys.exit(f"kill-test: the uninterrupted run failed ({code}):\n{text}")
        self.previous = self.complete(0, "calibration")

    def cycle_once(self, kill_no):
        # Half the kills get a pause between staging and commit: a wider window at the rename.
        extra = {"TRTMC_TEST_PAUSE_BEFORE_COMMIT_MS": "100"} if kill_no % 2 else None
        before = self.snapshot(self.work)
        if self.kill(self.args(), kill_no, "run.log", extra) is None:
            return False
        if os.path.exists(self.out):
            now = self.complete(kill_no, "after the kill")
            if now is not None and now != self.previous:
                self.previous = now  # the kill came after the commit: the new result is whole
        elif self.previous is not None:
            self.stats.violation(kill_no, "after the kill R is gone: the previous result was lost")
        after = self.snapshot(self.work)
        code, text = self.finish(self.args(), "run.log")
        if code != 0:
            self.stats.violation(kill_no, f"the next run exited {code}: {text[-300:]}")
        else:
            now = self.complete(kill_no, "after the next run")
            if now is not None and now == self.previous:
                self.stats.violation(kill_no, "the next run did not replace R")
            self.previous = now
        self.leftovers(kill_no, self.work, before, after)
        return True


class BundleBuild(Scenario):
    """`run` whose bundle is built (a fresh cache, or --rebuild of a cached one), killed during the
    build; the next run must succeed and leave no temporary directory in the cache."""

    name = "bundle build"
    events = ["bundle .tmp- dir created", "bundle file written"]

    def setup(self):
        self.cache = os.path.join(self.work, "cache-0")
        self.out = os.path.join(self.work, "R")

    def args(self, rebuild):
        return [self.bin, "run", "--model", "tiny-cnn", "--bundle-cache", self.cache,
                "--iterations", "5", "--warmup", "1", "-o", self.out, "-q"] + \
            (["--rebuild"] if rebuild else [])

    def event_predicate(self, event):
        tmp = os.path.join(self.cache, "*", ".tmp-*")
        if event == "bundle .tmp- dir created":
            return self.appeared(tmp, glob.glob(tmp))
        return self.appeared(os.path.join(tmp, "*"), glob.glob(os.path.join(tmp, "*")))

    def calibrate(self):
        started = time.monotonic()
        code, text = self.finish(self.args(True), "bundle.log")
        self.expected_s = time.monotonic() - started
        if code != 0:
            sys.exit(f"kill-test: the uninterrupted bundle build failed ({code}):\n{text}")

    def cycle_once(self, kill_no):
        # Even kills: a cache of its own (the first build); odd kills: --rebuild over a cached bundle.
        rebuild = kill_no % 2 == 1
        if not rebuild:
            self.cache = os.path.join(self.work, f"cache-{kill_no}")
        before = self.snapshot(self.cache)
        if self.kill(self.args(rebuild), kill_no, "bundle.log") is None:
            return False
        bundles = glob.glob(os.path.join(self.cache, "*", "*.bundle"))
        for bundle in bundles:
            if not os.path.isfile(os.path.join(bundle, "bundle.json")):
                self.stats.violation(kill_no, f"after the kill a bundle without bundle.json is in "
                                              f"place: {bundle}")
        after = self.snapshot(self.cache)
        code, text = self.finish(self.args(False), "bundle.log")
        if code != 0:
            self.stats.violation(kill_no, f"the next run exited {code}: {text[-300:]}")
        elif bundles and (self.snapshot(self.cache) - before) & (after - before):
            # A run that finds the bundle cached must clear what the killed build left beside it.
            left = sorted((self.snapshot(self.cache) - before) & (after - before))
            self.stats.violation(kill_no, f"a run that found the bundle cached kept the killed "
                                          f"build's temporaries: {left[:3]}")
        self.leftovers(kill_no, self.cache, before, after)
        if not rebuild and kill_no > 1:
            shutil.rmtree(os.path.join(self.work, f"cache-{kill_no - 2}"), ignore_errors=True)
        return True


MATRIX_SUITE = """schema: trtmc.perf-suite/v1
name: kill-test
thresholds: {green_max: 1.3, yellow_max: 2.0, min_samples: 10}
measure: {warmup: 2, iterations: 12, rounds: 3}
rows:
  - entry: tiny-cnn.classify
    model: tiny-cnn
    testcase: single
    candidate: {runtime: onnxruntime}
    reference: {backend: onnxruntime-python}
  - entry: tiny-cnn.classify
    model: tiny-cnn
    testcase: single
    candidate: {runtime: tract}
    reference: {backend: onnxruntime-python}
"""
MATRIX_ROWS = 2


class Matrix(Scenario):
    """`matrix run -o M` killed, then `matrix resume M` killed, then resumed to the end: every row
    exactly once, finished rows untouched by a resume, no temporary file left in M."""

    name = "matrix run/resume"
    events = ["M created", "plan temporary created", "rows/ created", "row finished",
              "results.json temporary created", "candidate staging created"]

    def setup(self):
        catalog = os.path.join(self.work, "catalog", "tiny-cnn")
        os.makedirs(catalog)
        for f in ["MODEL.toml", "e2e.toml"]:
            shutil.copy(os.path.join(ROOT, "catalog/tiny-cnn", f), catalog)
        self.catalog = os.path.dirname(catalog)
        self.envfile = os.path.join(self.work, "env.yaml")
        with open(self.envfile, "w") as f:
            f.write("schema: trtmc.perf-environment/v1\nname: kill-test\nexecutables: [python3]\n"
                    f"bundle_cache: {self.work}/bundles\nresults_root: {self.work}/results\n"
                    "free_storage_gib: 0\nslurm: {poll_s: 0.5, timeout_s: 600}\n")
        self.suite = os.path.join(self.work, "suite.yaml")
        with open(self.suite, "w") as f:
            f.write(MATRIX_SUITE)
        self.episode = 0
        self.out = None

    def run_args(self):
        return [self.bin, "matrix", "run", self.suite, "--environment", self.envfile,
                "--manifest-root", self.catalog, "-o", self.out]

    def resume_args(self):
        return [self.bin, "matrix", "resume", self.out]

    def event_predicate(self, event):
        m = self.out
        attempts = os.path.join(m, "rows", "*", "attempt-*")
        if os.path.isdir(os.path.join(m, "rows")) and event in ("M created", "rows/ created"):
            # A resume: these exist already; kill when it starts its first attempt instead.
            return self.appeared(attempts, glob.glob(attempts))
        if event == "M created":
            return lambda: os.path.exists(m)
        if event == "plan temporary created":
            return self.appeared(os.path.join(m, ".matrix-run.json.tmp-*"))
        if event == "rows/ created":
            existed = os.path.isdir(os.path.join(m, "rows"))
            return (lambda: True) if existed else (lambda: os.path.isdir(os.path.join(m, "rows")))
        if event == "row finished":
            rows = os.path.join(m, "rows", "*.json")
            return self.appeared(rows, glob.glob(rows))
        if event == "results.json temporary created":
            return self.appeared(os.path.join(m, ".results.json.tmp-*"))
        return self.appeared(os.path.join(m, "rows", "*", "attempt-*", ".*.staging-*"))

    def calibrate(self):
        self.out = os.path.join(self.work, "M-calibration")
        started = time.monotonic()
        code, text = self.finish(self.run_args(), "matrix.log")
        self.expected_s = time.monotonic() - started
        if code != 0:
            sys.exit(f"kill-test: the uninterrupted matrix run failed ({code}):\n{text}")
        shutil.rmtree(self.out)

    def check_rows(self, kill_no, when):
        """Finished rows must be valid and unchanged since first seen."""
        for path in sorted(glob.glob(os.path.join(self.out, "rows", "*.json"))):
            try:
                read_json(path)
            except (OSError, ValueError) as e:
                self.stats.violation(kill_no, f"{when}: {os.path.relpath(path, self.work)} is not "
                                              f"valid JSON: {e}")
                continue
            attempts = sorted(glob.glob(os.path.join(path[:-len(".json")], "attempt-*")))
            seen, seen_attempts = self.rows_seen.setdefault(path, (digest(path), attempts))
            if seen != digest(path):
                self.stats.violation(kill_no, f"{when}: the finished row {os.path.basename(path)} "
                                              "was rewritten")
            if attempts != seen_attempts:
                self.stats.violation(kill_no, f"{when}: the finished row {os.path.basename(path)} "
                                              f"ran again: {[os.path.basename(a) for a in attempts]}")
        results = os.path.join(self.out, "results.json")
        if os.path.exists(results):
            try:
                read_json(results)
            except (OSError, ValueError) as e:
                self.stats.violation(kill_no, f"{when}: results.json is not valid JSON: {e}")

    def cycle_once(self, kill_no):
        """An episode: kill `matrix run`, kill `matrix resume` (or `run` again when M does not exist),
        then resume to the end. Returns the number of kills made."""
        self.episode += 1
        self.out = os.path.join(self.work, f"M-{self.episode}")
        self.rows_seen = {}
        kills = 0
        after = set()
        for step in range(2):
            resume = os.path.exists(self.out)
            args = self.resume_args() if resume else self.run_args()
            # A resume has less left to do than a whole run.
            if self.kill(args, kill_no + kills, "matrix.log", share=0.5 if resume else 1.0) is None:
                continue
            kills += 1
            self.check_rows(kill_no + kills - 1, "after the kill")
            after |= self.snapshot(self.out)
        last = kill_no + max(kills, 1) - 1
        args = self.resume_args() if os.path.exists(self.out) else self.run_args()
        code, text = self.finish(args, "matrix.log")
        if code != 0:
            self.stats.violation(last, f"`matrix {args[2]}` after the kills exited {code}: "
                                       f"{text.strip().splitlines()[-1][:300] if text.strip() else ''}")
            shutil.rmtree(self.out, ignore_errors=True)
            return kills
        self.check_rows(last, "after the resume")
        try:
            results = read_json(os.path.join(self.out, "results.json"))
            ids = [r["id"] for r in results["rows"]]
            if len(ids) != MATRIX_ROWS or len(set(ids)) != MATRIX_ROWS:
                self.stats.violation(last, f"results.json rows {ids}: expected {MATRIX_ROWS}, "
                                           "each once")
            if results["summary"]["pending"] != 0:
                self.stats.violation(last, f"{results['summary']['pending']} row(s) still pending")
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.stats.violation(last, f"results.json after the resume: {e}")
        self.leftovers(last, self.out, set(), after)
        shutil.rmtree(self.out, ignore_errors=True)
        return kills


TUNE_ROUTES = "-test:sleep_us=[0|30000|60000]"
TUNE_ROUTE_COUNT = 3
TUNE_QUICK = ["--calls", "8", "--warmup", "1", "--final-passes", "6", "--final-calls", "3",
              "--race-round-calls", "4"]


class Tune(Scenario):
    """`tune` killed, then `tune --continue` killed, then continued to the end: iterations 0..n once,
    each search route evaluated once, no cache line lost, tuning-summary.json written."""

    name = "tune/--continue"
    events = ["cache created", "cache line appended", "bundle .tmp- created"]

    def setup(self):
        self.episode = 0
        self.bundles = os.path.join(self.work, "bundles-0")

    def tune_args(self):
        return [self.bin, "tune", "--model", "tiny-cnn", "--runtime", "tract", "--routes",
                TUNE_ROUTES, "--search", "full", "--early-stop-factor", "0", "-o", self.out,
                "--bundle-cache", self.bundles, "--quiet"] + TUNE_QUICK

    def continue_args(self):
        return [self.bin, "tune", "--continue", "--cache", self.cache]

    def event_predicate(self, event):
        if event == "cache created" and not os.path.exists(self.cache):
            return lambda: os.path.exists(self.cache)
        if event in ("cache created", "cache line appended"):  # --continue: the cache exists
            start = self.complete_lines()
            return lambda: len(self.complete_lines()) > len(start)
        tmp = os.path.join(self.bundles, "*", ".tmp-*")
        return self.appeared(tmp, glob.glob(tmp))

    def complete_lines(self):
        try:
            with open(self.cache, "rb") as f:
                text = f.read()
        except OSError:
            return []
        return text.split(b"\n")[:-1]  # the part after the last newline is torn or empty

    def has_header(self):
        return len(self.complete_lines()) >= 1

    def calibrate(self):
        self.out = os.path.join(self.work, "calibration")
        self.cache = os.path.join(self.out, "tuning-cache.jsonl")
        started = time.monotonic()
        code, text = self.finish(self.tune_args(), "tune.log")
        self.expected_s = time.monotonic() - started
        if code != 0:
            sys.exit(f"kill-test: the uninterrupted tune failed ({code}):\n{text}")
        shutil.rmtree(self.out)

    def cycle_once(self, kill_no):
        self.episode += 1
        self.out = os.path.join(self.work, f"T-{self.episode}")
        self.cache = os.path.join(self.out, "tuning-cache.jsonl")
        # A bundle cache of its own, so that every episode builds (a window for the build event).
        self.bundles = os.path.join(self.work, f"bundles-{self.episode}")
        kept = []
        kills = 0
        bundles_before = self.snapshot(self.bundles)
        after, bundles_after = set(), set()
        for step in range(2):
            args = self.continue_args() if self.has_header() else self.tune_args()
            if not self.has_header():
                shutil.rmtree(self.out, ignore_errors=True)  # nothing was recorded: start afresh
            share = 0.5 if "--continue" in args else 1.0
            if self.kill(args, kill_no + kills, "tune.log", share=share) is None:
                continue
            kills += 1
            lines = self.complete_lines()
            if lines[:len(kept)] != kept:
                self.stats.violation(kill_no + kills - 1, "a tuning-cache line recorded before the "
                                                          "kill was changed or lost")
            for n, line in enumerate(lines):
                try:
                    json.loads(line)
                except ValueError:
                    self.stats.violation(kill_no + kills - 1, f"cache line {n + 1} is not JSON but "
                                                              f"ends with a newline: {line[:80]!r}")
            kept = lines
            after |= self.snapshot(self.out)
            bundles_after |= self.snapshot(self.bundles)
        last = kill_no + max(kills, 1) - 1
        if not self.has_header():
            shutil.rmtree(self.out, ignore_errors=True)
        args = self.continue_args() if self.has_header() else self.tune_args()
        code, text = self.finish(args, "tune.log")
        if code != 0:
            self.stats.violation(last, f"`tune{' --continue' if '--continue' in args else ''}` after "
                                       f"the kills exited {code}: "
                                       f"{text.strip().splitlines()[-1][:300] if text.strip() else ''}")
            shutil.rmtree(self.bundles, ignore_errors=True)
            return kills
        lines = self.complete_lines()
        if lines[:len(kept)] != kept:
            self.stats.violation(last, "--continue changed or lost a cache line of the killed tune")
        try:
            records = [json.loads(line) for line in lines[1:] if line.strip()]
            iters = [r["iter"] for r in records]
            if iters != list(range(len(iters))):
                self.stats.violation(last, f"iterations not 0..n exactly once: {iters}")
            search = [r["build_route"] for r in records if r.get("phase") == "full"]
            if len(search) != TUNE_ROUTE_COUNT or len(set(search)) != TUNE_ROUTE_COUNT:
                self.stats.violation(last, f"search routes evaluated {search}: expected each of "
                                           f"{TUNE_ROUTE_COUNT} once")
            read_json(os.path.join(self.out, "tuning-summary.json"))
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.stats.violation(last, f"after --continue: {e}")
        self.leftovers(last, self.out, set(), after)
        self.leftovers(last, self.bundles, bundles_before, bundles_after)
        shutil.rmtree(self.out, ignore_errors=True)
        shutil.rmtree(self.bundles, ignore_errors=True)
        return kills


class Concurrency(Scenario):
    """The concurrency and signal cases of issue 34, one per cycle in turn, each counted as a kill:
    a directory made at `run -o` during the run (never deleted: exit 6, the result moved to `R.kept`);
    SIGHUP to a measuring `run` (its calls kept, exit 130); two `tune --continue` started together on a
    killed tune's cache (one refused with exit 6, the cache stays valid, every iteration once); two
    `matrix resume` started together after a kill -9 of the orchestrator alone during long calls (one
    refused, no row runs twice; the killed session's leaf `run` must be gone within the survivor grace);
    SIGINT, SIGTERM or SIGHUP to `tune` or `matrix` (exit 130, no process left, `--continue`/`resume`
    finishes)."""

    name = "concurrency"
    CASES = ["late mkdir at -o", "SIGHUP to run", "two tune --continue", "two matrix resume",
             "signal to tune or matrix"]

    def setup(self):
        self.matrix = Matrix(self.bin, self.work, self.rng, self.stats)
        self.matrix.setup()
        self.tune = Tune(self.bin, self.work, self.rng, self.stats)
        self.tune.setup()
        self.episode = 0

    def calibrate(self):
        self.matrix.calibrate()
        self.tune.calibrate()
        self.expected_s = self.tune.expected_s

    def run_args(self, out, iterations):
        return [self.bin, "run", "--manifest-root", TEST_CATALOG, "--model", "test-sleep",
                "--set", "request.sleep_us=2000", "--iterations", str(iterations), "--warmup", "5",
                "-o", out, "-q"]

    def wait_for(self, proc, predicate, limit=120.0):
        """Polls until `predicate` holds while `proc` runs; False when `proc` ended first."""
        started = time.monotonic()
        while proc.poll() is None and time.monotonic() - started < limit:
            if predicate():
                return True
            time.sleep(POLL_S)
        return False

    def counted(self, kill_no, case, who="orchestrator only"):
        self.stats.kills += 1
        self.stats.at_event[case] = self.stats.at_event.get(case, 0) + 1
        if who == "orchestrator only":
            self.stats.orchestrator_only += 1
        log(f"  kill {kill_no}: {case} ({who})")

    def ended(self, proc, out, tag, kill_no):
        proc.wait()
        out.close()
        self.reap_survivors(tag, kill_no)

    def late_mkdir(self, kill_no):
        self.episode += 1
        out = os.path.join(self.work, f"R-{self.episode}")
        tag = self.new_tag()
        proc, log_file = self.start(self.run_args(out, 1000), tag, "concurrency.log")
        staged = os.path.join(self.work, f".R-{self.episode}.staging-*")
        if not self.wait_for(proc, lambda: glob.glob(staged)):
            self.ended(proc, log_file, tag, kill_no)
            self.stats.missed += 1
            return False
        os.mkdir(out)
        with open(os.path.join(out, "precious.txt"), "w") as f:
            f.write("x\n")
        self.counted(kill_no, self.CASES[0], "no kill")
        self.ended(proc, log_file, tag, kill_no)
        if proc.returncode != 6:
            self.stats.violation(kill_no, f"a directory made at -o: exit {proc.returncode}, not 6")
        try:
            with open(os.path.join(out, "precious.txt")) as f:
                if f.read() != "x\n" or len(os.listdir(out)) != 1:
                    raise ValueError("changed")
        except (OSError, ValueError) as e:
            self.stats.violation(kill_no, f"the directory made at -o was not left as it was: {e}")
        try:
            doc = read_json(os.path.join(out + ".kept", "result.json"))
            if doc["cases"][0]["status"] != "completed":
                raise ValueError(doc["cases"][0]["status"])
        except (OSError, ValueError, KeyError, IndexError) as e:
            self.stats.violation(kill_no, f"the measured result is not kept in {out}.kept: {e}")
        left = [n for n in os.listdir(self.work) if TEMPORARY.search(n)]
        if left:
            self.stats.violation(kill_no, f"temporaries left beside -o: {left}")
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(out + ".kept", ignore_errors=True)
        return True

    def sighup_run(self, kill_no):
        self.episode += 1
        out = os.path.join(self.work, f"H-{self.episode}")
        tag = self.new_tag()
        proc, log_file = self.start(self.run_args(out, 100000), tag, "concurrency.log")
        # Some calls first: the progress file of the running case appears once it measures.
        progress = os.path.join(self.work, f".H-{self.episode}.staging-*", "*", ".worker-progress.json")
        if not self.wait_for(proc, lambda: glob.glob(progress)):
            self.ended(proc, log_file, tag, kill_no)
            self.stats.missed += 1
            return False
        time.sleep(self.rng.uniform(0.05, 1.0))
        os.kill(proc.pid, signal.SIGHUP)
        self.counted(kill_no, self.CASES[1], "SIGHUP")
        self.ended(proc, log_file, tag, kill_no)
        if proc.returncode != 130:
            self.stats.violation(kill_no, f"SIGHUP to run: exit {proc.returncode}, not 130")
        try:
            doc = read_json(os.path.join(out, "result.json"))
            case = doc["cases"][0]
            if case["status"] != "interrupted" or case["measurement"]["observations"] < 1:
                raise ValueError(f"{case['status']}, {case['measurement']['observations']} calls")
        except (OSError, ValueError, KeyError, IndexError) as e:
            self.stats.violation(kill_no, f"SIGHUP lost what the run measured: {e}")
        shutil.rmtree(out, ignore_errors=True)
        return True

    def together(self, args_list, logname):
        """Starts the commands 0.1 s apart, waits for all; returns their exit codes and tags."""
        procs = []
        for args in args_list:
            tag = self.new_tag()
            procs.append((self.start(args, tag, logname), tag))
            time.sleep(0.1)
        codes = []
        for (proc, out), tag in procs:
            try:
                proc.wait(timeout=900)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            out.close()
            self.reap_survivors(tag, None, quiet=True)
            codes.append(proc.returncode)
        return codes

    def one_refused(self, kill_no, what, codes):
        if sorted(codes) != [0, 6]:
            self.stats.violation(kill_no, f"two {what} at once exited {codes}: expected one 0 and "
                                          "one 6 (refused)")

    def two_continues(self, kill_no):
        t = self.tune
        t.episode += 1
        t.out = os.path.join(self.work, f"T-{t.episode}")
        t.cache = os.path.join(t.out, "tuning-cache.jsonl")
        t.bundles = os.path.join(self.work, "bundles-concurrency")
        tag = self.new_tag()
        proc, log_file = self.start(t.tune_args(), tag, "concurrency.log")
        if not self.wait_for(proc, lambda: len(t.complete_lines()) >= 2, limit=600):
            self.ended(proc, log_file, tag, kill_no)
            self.stats.missed += 1
            shutil.rmtree(t.out, ignore_errors=True)
            return False
        group = self.rng.random() >= 0.5
        os.killpg(proc.pid, signal.SIGKILL) if group else os.kill(proc.pid, signal.SIGKILL)
        self.counted(kill_no, self.CASES[2], "group" if group else "orchestrator only")
        self.ended(proc, log_file, tag, kill_no)
        kept = t.complete_lines()
        codes = self.together([t.continue_args(), t.continue_args()], "concurrency.log")
        self.one_refused(kill_no, "`tune --continue`", codes)
        lines = t.complete_lines()
        if lines[:len(kept)] != kept:
            self.stats.violation(kill_no, "a cache line of the killed tune was changed or lost")
        try:
            iters = [json.loads(line)["iter"] for line in lines[1:] if line.strip()]
            if iters != list(range(len(iters))):
                self.stats.violation(kill_no, f"iterations not 0..n exactly once: {iters}")
            read_json(os.path.join(t.out, "tuning-summary.json"))
        except (OSError, ValueError, KeyError) as e:
            self.stats.violation(kill_no, f"after two --continue: {e}")
        shutil.rmtree(t.out, ignore_errors=True)
        return True

    def two_resumes(self, kill_no):
        m = self.matrix
        m.episode += 1
        m.out = os.path.join(self.work, f"M-{m.episode}")
        m.rows_seen = {}
        slow = {"TRTMC_TEST_MATRIX_CANDIDATE_DELAY_US": "100000"}
        tag = self.new_tag()
        proc, log_file = self.start(m.run_args(), tag, "concurrency.log", slow)
        attempt = os.path.join(m.out, "rows", "*", "attempt-*", "candidate*.log")
        if not self.wait_for(proc, lambda: glob.glob(attempt), limit=300):
            self.ended(proc, log_file, tag, kill_no)
            self.stats.missed += 1
            shutil.rmtree(m.out, ignore_errors=True)
            return False
        time.sleep(self.rng.uniform(0.0, 1.5))
        os.kill(proc.pid, signal.SIGKILL)  # the orchestrator alone, its leaf in a long call
        self.counted(kill_no, self.CASES[3])
        self.ended(proc, log_file, tag, kill_no)
        m.check_rows(kill_no, "after the kill")
        codes = self.together([m.resume_args(), m.resume_args()], "concurrency.log")
        self.one_refused(kill_no, "`matrix resume`", codes)
        self.matrix_complete(kill_no)
        return True

    def matrix_complete(self, kill_no):
        m = self.matrix
        m.check_rows(kill_no, "after the resume")
        try:
            results = read_json(os.path.join(m.out, "results.json"))
            ids = [r["id"] for r in results["rows"]]
            if len(ids) != MATRIX_ROWS or len(set(ids)) != MATRIX_ROWS:
                self.stats.violation(kill_no, f"results.json rows {ids}: expected {MATRIX_ROWS}")
            if results["summary"]["pending"] != 0:
                self.stats.violation(kill_no, f"{results['summary']['pending']} row(s) pending")
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.stats.violation(kill_no, f"results.json after the resume: {e}")
        shutil.rmtree(m.out, ignore_errors=True)

    def signal_orchestrator(self, kill_no):
        sig = self.rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
        if kill_no % 2:
            t = self.tune
            t.episode += 1
            t.out = os.path.join(self.work, f"T-{t.episode}")
            t.cache = os.path.join(t.out, "tuning-cache.jsonl")
            t.bundles = os.path.join(self.work, "bundles-concurrency")
            args, ready, finish = t.tune_args(), lambda: len(t.complete_lines()) >= 2, t.continue_args
            what = "tune"
        else:
            m = self.matrix
            m.episode += 1
            m.out = os.path.join(self.work, f"M-{m.episode}")
            m.rows_seen = {}
            attempt = os.path.join(m.out, "rows", "*", "attempt-*", "candidate*.log")
            args, ready, finish = m.run_args(), lambda: glob.glob(attempt), m.resume_args
            what = "matrix"
        tag = self.new_tag()
        proc, log_file = self.start(args, tag, "concurrency.log")
        if not self.wait_for(proc, ready, limit=600):
            self.ended(proc, log_file, tag, kill_no)
            self.stats.missed += 1
            return False
        os.kill(proc.pid, sig)
        self.counted(kill_no, self.CASES[4], f"{signal.Signals(sig).name} to {what}")
        self.ended(proc, log_file, tag, kill_no)
        if proc.returncode not in (130, 0):
            self.stats.violation(kill_no, f"{signal.Signals(sig).name} to {what}: exit "
                                          f"{proc.returncode}, not 130")
        code, text = self.finish(finish(), "concurrency.log")
        if code != 0:
            self.stats.violation(kill_no, f"finishing after the signal exited {code}: {text[-300:]}")
        if what == "matrix":
            self.matrix_complete(kill_no)
        else:
            lines = self.tune.complete_lines()
            iters = [json.loads(line)["iter"] for line in lines[1:] if line.strip()]
            if iters != list(range(len(iters))):
                self.stats.violation(kill_no, f"iterations not 0..n exactly once: {iters}")
            shutil.rmtree(self.tune.out, ignore_errors=True)
        return True

    def cycle_once(self, kill_no):
        case = [self.late_mkdir, self.sighup_run, self.two_continues, self.two_resumes,
                self.signal_orchestrator][(kill_no - 1) % len(self.CASES)]
        return case(kill_no)


SCENARIOS = {"run": RunOutput, "bundle": BundleBuild, "matrix": Matrix, "tune": Tune,
             "concurrency": Concurrency}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=int(os.environ.get("KILLS", "50")),
                    help="kills per command (default 50)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SEED", "1")))
    ap.add_argument("--commands", default=os.environ.get("COMMANDS", ",".join(ALL_COMMANDS)),
                    help=f"comma-separated subset of {','.join(ALL_COMMANDS)}")
    ap.add_argument("--work", default=None, help="work directory (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    bin_path = os.path.abspath(os.environ.get("TRTMC_BIN",
                                              os.path.join(ROOT, "target/release/trtmc-bench")))
    if not os.access(bin_path, os.X_OK):
        sys.exit(f"kill-test: {bin_path} is missing: cargo build --release -p trtmc-bench "
                 "(or set TRTMC_BIN)")
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    unknown = [c for c in commands if c not in SCENARIOS]
    if unknown:
        sys.exit(f"kill-test: unknown command(s) {unknown}; choose from {ALL_COMMANDS}")
    work = args.work or tempfile.mkdtemp(prefix="trtmc-kill.")
    log(f"kill test: {args.kills} kills per command, seed {args.seed}, binary {bin_path}, "
        f"work dir {work}, load {os.getloadavg()[0]:.2f}")
    all_stats = []
    for name in commands:
        stats = Stats(SCENARIOS[name].name)
        all_stats.append(stats)
        sdir = os.path.join(work, name)
        os.makedirs(sdir, exist_ok=True)
        scenario = SCENARIOS[name](bin_path, sdir, random.Random(f"{args.seed}-{name}"), stats)
        scenario.setup()
        scenario.calibrate()
        log(f"{stats.name}: an uninterrupted command takes {scenario.expected_s:.2f} s")
        started = time.monotonic()
        attempts = 0
        while stats.kills < args.kills and attempts < args.kills * 4:
            attempts += 1
            scenario.cycle_once(stats.kills + 1)
            stats.cycles += 1
        stats.seconds = time.monotonic() - started
        if stats.kills < args.kills:
            stats.violation(stats.kills, f"only {stats.kills} of {args.kills} planned kills landed "
                                         f"in {attempts} attempts")
    print_summary(all_stats)
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if any(s.violations for s in all_stats) else 0)


def print_summary(all_stats):
    log("")
    log("| command | kills | at file events | at random times | orchestrator only | ended before "
        "the kill | kills that left temporaries | not removed by the next command | violations | "
        "s per kill (with the command that finishes) |")
    log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for s in all_stats:
        events = sum(s.at_event.values())
        per_kill = s.seconds / s.kills if s.kills else 0.0
        log(f"| {s.name} | {s.kills} | {events} | {s.at_random} | {s.orchestrator_only} | {s.missed} | "
            f"{s.leftovers_found} | {s.leftovers_kept} | {len(s.violations)} | {per_kill:.1f} |")
    for s in all_stats:
        if s.at_event:
            log(f"{s.name}: kills by file event: "
                + ", ".join(f"{k} {v}" for k, v in sorted(s.at_event.items())))
    for s in all_stats:
        for kill, what in s.notes:
            log(f"note {s.name} kill {kill}: {what}")
    for s in all_stats:
        for kill, what in s.violations:
            log(f"FAIL {s.name} kill {kill}: {what}")
    if not any(s.violations for s in all_stats):
        log("PASS: nothing lost, duplicated or left behind")


if __name__ == "__main__":
    main()
