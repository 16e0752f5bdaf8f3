#!/usr/bin/env python3
"""Scale of declared data (issue 34 item 11): how long `run` takes and how much memory it uses for a
case that declares N samples (tiny-cnn, one seeded image per sample, batch size 1, so the calls
rotate over them) while making only a few calls.

For each N it writes a catalog copy of tiny-cnn whose case lists N `{ seed = i }` samples and times
`run --dry-run` (loading and resolving the case) and `run --iterations 3 --warmup 0` (worker
included), with the maximum resident set size of the command and its children (getrusage of the
reaped children). Binaries are interleaved per repetition, so machine drift falls on each alike.

    scripts/bench-samples.py --bin OLD --bin NEW --samples 10000 --samples 100000 --repeat 3
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def catalog(root: Path, samples: int) -> None:
    model = root / "scale-cnn"
    shutil.copytree(REPO / "catalog" / "tiny-cnn", model)
    manifest = model / "MODEL.toml"
    manifest.write_text(manifest.read_text().replace('name = "tiny-cnn"', 'name = "scale-cnn"'))
    listed = ", ".join(f"{{ seed = {i} }}" for i in range(samples))
    (model / "e2e.toml").write_text(
        '[[case]]\nname = "many"\nsummary = "declared samples in rotation"\n'
        f"[case.request]\nbatch_size = 1\nsamples = [{listed}]\n"
    )


def measure(argv: list, cwd: Path) -> tuple:
    """Wall seconds, CPU seconds (user + system) and max RSS (MiB) of one command and its reaped
    children, in a fresh process so the children's peak is this command's alone. On a loaded
    machine the CPU seconds are the figure to compare; the wall time waits for a core."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "wall = time.monotonic() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(p.returncode, wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)\n"
        "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:] if p.returncode else '')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *argv], cwd=cwd, capture_output=True, text=True)
    code, wall, cpu, rss = out.stdout.split()
    if code != "0":
        sys.stderr.write(out.stderr)
    return int(code), float(wall), float(cpu), float(rss)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="trtmc-bench to measure (repeatable)")
    ap.add_argument("--samples", action="append", type=int, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--dry-run-only", action="store_true", help="time loading and resolving only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print("| samples | binary | command | exit | wall s (each repetition) | CPU s (each) | max RSS MiB |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for n in args.samples:
            root = tmp / f"catalog-{n}"
            catalog(root, n)
            cache = tmp / "bundles"
            rows = {}
            for _ in range(args.repeat):
                for exe in args.bin:
                    commands = [("dry run", ["--dry-run"])]
                    if not args.dry_run_only:
                        commands.append(("3 calls", ["--iterations", "3", "--warmup", "0", "--telemetry",
                                                     "off", "-o", str(tmp / "out"), "--quiet"]))
                    for what, extra in commands:
                        argv = ["timeout", str(args.timeout), exe, "run", "--manifest-root", str(root),
                                "--model", "scale-cnn", "--bundle-cache", str(cache), *extra]
                        code, wall, cpu, rss = measure(argv, tmp)
                        shutil.rmtree(tmp / "out", ignore_errors=True)
                        rows.setdefault((exe, what), []).append((code, wall, cpu, rss))
            for (exe, what), runs in rows.items():
                walls = ", ".join(f"{r[1]:.2f}" for r in runs)
                cpus = ", ".join(f"{r[2]:.2f}" for r in runs)
                codes = sorted({r[0] for r in runs})
                rss = max(r[3] for r in runs)
                print(f"| {n} | {exe} | {what} | {codes} | {walls} | {cpus} | {rss:.0f} |")


if __name__ == "__main__":
    main()
