#!/usr/bin/env python3
"""Your own corpus (docs/performance.md, "Your own model: a corpus from public packages"): real ONNX
models shipped inside public PyPI and npm packages, run unedited through `trtmc-bench run` on tract and
ONNX Runtime.

For each model below the script fetches the named package version with the registry's own client
(`pip download --no-deps`, `npm pack`) into a cache folder, extracts the .onnx file from the wheel or
tarball (the file is not changed), and runs

    trtmc-bench run --onnx MODEL --runtime R --warmup W --iterations N [--shape ...] [--inputs ...]

for R in tract and onnxruntime, one process per runtime. Models whose inputs choose the code path get
real values with --inputs (the voice-activity models' sample rate is 16000 and their state starts at
zero, as the packages' own code feeds them); dynamic image sizes are fixed with --shape at the size
the package's own pre-processing uses. The models are not committed (size, licences): they stay in the
cache folder.

Usage: scripts/corpus.py [--bin target/release/trtmc-bench] [--cache ~/.cache/trtmc-corpus]
                         [--iterations 20] [--warmup 3] [--only SUBSTRING] [--json corpus.json]
Needs python3 with numpy, pip and npm (the registries reachable). Not a test: it prints a Markdown
table (model, package@version, size, and per runtime: p50 or the refusal) and writes --json.
"""
import argparse
import json
import os
import subprocess
import sys
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Image sizes from the packages' pre-processing: RapidOCR resizes detection input to a multiple of 32
# (limit 736 by default), recognition lines to height 48 (width 320), angle crops to 48x192.
OCR_DET = {"shape": ["x:1x3x736x736"]}
OCR_REC = {"shape": ["x:1x3x48x320"]}
OCR_CLS = {"shape": ["x:1x3x48x192"]}
# Silero VAD v5/v6: 512 samples per call at 16 kHz, state (2, batch, 128) zero at start, sr = 16000.
VAD = {"inputs": {"input": ("float32", [1, 512], "noise"), "state": ("float32", [2, 1, 128], "zeros"),
                  "sr": ("int64", [], 16000)}}
# Silero VAD v4 (the "legacy" model of @ricky0123/vad-web): LSTM state h, c of (2, batch, 64).
VAD_LEGACY = {"inputs": {"input": ("float32", [1, 512], "noise"), "sr": ("int64", [], 16000),
                         "h": ("float32", [2, 1, 64], "zeros"), "c": ("float32", [2, 1, 64], "zeros")}}
# The half-precision VAD takes no sr input (16 kHz only).
VAD_HALF = {"inputs": {"input": ("float32", [1, 512], "noise"), "state": ("float32", [2, 1, 128], "zeros")}}

# (label, kind, registry, package, version, file inside the package, how to feed it)
CORPUS = [
    ("magika-standard_v3_3", "file-type classifier", "pypi", "magika", "1.0.3",
     "magika/models/standard_v3_3/model.onnx", {"shape": ["bytes:1x2048"]}),
    ("rapidocr-det-PP-OCRv4", "OCR text detection", "pypi", "rapidocr-onnxruntime", "1.4.4",
     "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", OCR_DET),
    ("rapidocr-rec-PP-OCRv4", "OCR text recognition", "pypi", "rapidocr-onnxruntime", "1.4.4",
     "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", OCR_REC),
    ("rapidocr-cls-mobile-v2", "OCR text angle", "pypi", "rapidocr-onnxruntime", "1.4.4",
     "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", OCR_CLS),
    ("silero-vad", "voice activity (If branches)", "pypi", "silero-vad", "6.2.3",
     "silero_vad/data/silero_vad.onnx", VAD),
    ("silero-vad-half", "voice activity, float16 weights", "pypi", "silero-vad", "6.2.3",
     "silero_vad/data/silero_vad_half.onnx", VAD_HALF),
    ("vad-web-legacy", "voice activity (v4, LSTM)", "npm", "@ricky0123/vad-web", "0.0.31",
     "package/dist/silero_vad_legacy.onnx", VAD_LEGACY),
]


def fetch(cache, registry, package, version):
    """The package archive, downloaded once into the cache with the registry's client."""
    folder = os.path.join(cache, registry)
    os.makedirs(folder, exist_ok=True)
    if registry == "pypi":
        stem = package.replace("-", "_").lower() + "-" + version + "-"
        found = [f for f in os.listdir(folder) if f.lower().startswith(stem) and f.endswith(".whl")]
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "--quiet", "-d", folder, f"{package}=={version}"], check=True)
            found = [f for f in os.listdir(folder) if f.lower().startswith(stem) and f.endswith(".whl")]
    else:
        stem = package.lstrip("@").replace("/", "-") + "-" + version + ".tgz"
        found = [f for f in os.listdir(folder) if f == stem]
        if not found:
            subprocess.run(["npm", "pack", "--silent", f"{package}@{version}", "--pack-destination", folder],
                           check=True, stdout=subprocess.DEVNULL)
            found = [f for f in os.listdir(folder) if f == stem]
    if not found:
        sys.exit(f"{registry} {package}=={version}: the download left no archive in {folder}")
    return os.path.join(folder, sorted(found)[0])


def extract(archive, member, dest):
    """Copies `member` out of a wheel (zip) or npm tarball, byte for byte."""
    if os.path.exists(dest):
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as z, z.open(member) as src:
            data = src.read()
    else:
        with tarfile.open(archive) as t:
            data = t.extractfile(member).read()
    with open(dest + ".part", "wb") as f:
        f.write(data)
    os.replace(dest + ".part", dest)
    return dest


def write_inputs(spec, dest):
    """An .npz of the inputs a model's package feeds (zeros, a fixed value, or seeded noise)."""
    import numpy as np
    rng = np.random.default_rng(0)
    arrays = {}
    for name, (dtype, shape, value) in spec.items():
        if value == "noise":
            arrays[name] = (rng.standard_normal(shape) * 0.1).astype(dtype)
        elif value == "zeros":
            arrays[name] = np.zeros(shape, dtype=dtype)
        else:
            arrays[name] = np.array(value, dtype=dtype).reshape(shape)
    np.savez(dest, **arrays)
    return dest


def last_error(stderr):
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def run(binary, model, runtime, feed, args, out):
    cmd = [binary, "run", "--onnx", model, "--runtime", runtime, "--warmup", str(args.warmup),
           "--iterations", str(args.iterations), "--quiet", "-o", out,
           "--bundle-cache", os.path.join(args.cache, "bundles")]
    for s in feed.get("shape", []):
        cmd += ["--shape", s]
    if "inputs" in feed:
        cmd += ["--inputs", write_inputs(feed["inputs"], out + "-inputs.npz")]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timed out", "command": cmd}
    row = {"code": p.returncode, "command": cmd}
    try:
        with open(os.path.join(out, "result.json")) as f:
            case = json.load(f)["cases"][0]
    except (OSError, ValueError, KeyError, IndexError):
        case = {}
    if p.returncode == 0 and case.get("metrics"):
        row.update(status="ran", p50_ms=case["metrics"]["latency_ms"]["p50"],
                   calls=case["metrics"]["latency_ms"]["count"])
    else:
        row.update(status="refused" if p.returncode == 4 else "failed",
                   message=(case.get("error") or last_error(p.stderr) or f"exit {p.returncode}").splitlines()[0][:300])
    return row


def cell(r):
    if r["status"] == "ran":
        return f"ran, p50 {r['p50_ms']:.3g} ms"
    return f"{r['status']} (exit {r.get('code')}): {r.get('message', '')}".replace("|", "\\|")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "trtmc-bench"))
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "trtmc-corpus"))
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    args.cache = os.path.abspath(args.cache)
    rows = []
    for label, kind, registry, package, version, member, feed in CORPUS:
        if args.only and args.only not in label:
            continue
        archive = fetch(args.cache, registry, package, version)
        model = extract(archive, member, os.path.join(args.cache, "models", label + ".onnx"))
        row = {"model": label, "kind": kind, "package": f"{package}@{version}", "registry": registry,
               "file": member, "bytes": os.path.getsize(model)}
        for runtime in ["tract", "onnxruntime"]:
            out = os.path.join(args.cache, "results", f"{label}-{runtime}")
            subprocess.run(["rm", "-rf", out], check=False)
            row[runtime] = run(args.bin, model, runtime, feed, args, out)
            print(f"{label:26} {runtime:12} {cell(row[runtime])}", file=sys.stderr, flush=True)
        rows.append(row)
    print("| model | what | package (registry) | size | tract | ONNX Runtime |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['model']} | {r['kind']} | {r['package']} ({r['registry']}) | {r['bytes'] / 1e6:.1f} MB "
              f"| {cell(r['tract'])} | {cell(r['onnxruntime'])} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"models": rows}, f, indent=1)


if __name__ == "__main__":
    main()
