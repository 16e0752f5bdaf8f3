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
    """Wall seconds and max RSS (MiB) of one command and its reaped children, in a fresh process so
    the children's peak is this command's alone."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "wall = time.monotonic() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(p.returncode, wall, rss)\n"
        "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:] if p.returncode else '')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *argv], cwd=cwd, capture_output=True, text=True)
    code, wall, rss = out.stdout.split()
    if code != "0":
        sys.stderr.write(out.stderr)
    return int(code), float(wall), float(rss)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="trtmc-bench to measure (repeatable)")
    ap.add_argument("--samples", action="append", type=int, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print("| samples | binary | command | exit | wall s (each repetition) | max RSS MiB |")
        print("| --- | --- | --- | --- | --- | --- |")
        for n in args.samples:
            root = tmp / f"catalog-{n}"
            catalog(root, n)
            cache = tmp / "bundles"
            rows = {}
            for _ in range(args.repeat):
                for exe in args.bin:
                    for what, extra in [
                        ("dry run", ["--dry-run"]),
                        ("3 calls", ["--iterations", "3", "--warmup", "0", "--telemetry", "off",
                                     "-o", str(tmp / "out"), "--quiet"]),
                    ]:
                        argv = ["timeout", str(args.timeout), exe, "run", "--manifest-root", str(root),
                                "--model", "scale-cnn", "--bundle-cache", str(cache), *extra]
                        code, wall, rss = measure(argv, tmp)
                        shutil.rmtree(tmp / "out", ignore_errors=True)
                        rows.setdefault((exe, what), []).append((code, wall, rss))
            for (exe, what), runs in rows.items():
                walls = ", ".join(f"{w:.2f}" for _, w, _ in runs)
                codes = sorted({c for c, _, _ in runs})
                rss = max(r for _, _, r in runs)
                print(f"| {n} | {exe} | {what} | {codes} | {walls} | {rss:.0f} |")


if __name__ == "__main__":
    main()
