"""Shared pieces of the trtmc reference runners: request, inputs, timed loop, result.

A reference runner executes the same resolved case as `trtmc-bench run` in its own process, with its
own framework's public API (ONNX Runtime's Python `InferenceSession.run`, PyTorch), and writes a
result in the worker's observation protocol:

  request  trtmc.reference-request/v1   model, inputs index, operation, warmup, iterations,
                                        min_duration_s, seed, precision, threads, options, save_outputs,
                                        request (the case's values), operation_inputs (per-call inputs)
  result   trtmc.reference-result/v1    status, error, runtime {name, version}, boundary
                                        (public_pipeline_call_wall), precision (what ran),
                                        requested_precision, load_ms, warmup_ms, observations, notes

Inputs are raw little-endian C-order binaries described by a JSON index
({"inputs": [{"name", "dtype", "shape", "file"}]}), written by trtmc from the worker's own seeded
synthesis, so both sides feed identical tensors. Each timed call is one framework call, timed with
time.perf_counter_ns around it and nothing else; warm-ups are not observations. Non-finite outputs are
a reference failure, not a result. A precision other than the requested one is a failure too.

Exit codes: 0 ok, 1 reference failure (the result says why), 7 the framework is not installed, 130 the
orchestrator ended (with --parent-pipe).

`--parent-pipe` (anywhere on the command line; the matrix adds it, a person running a runner by hand
does not): standard input is a pipe the orchestrator holds open and never writes. When it closes, the
orchestrator has ended (even by kill -9), and the runner exits at once with 130, writing no result, so no
reference keeps measuring for a dead matrix.
"""

import json
import math
import os
import sys
import tempfile
import threading
import time

REQUEST_SCHEMA = "trtmc.reference-request/v1"
RESULT_SCHEMA = "trtmc.reference-result/v1"
BOUNDARY = "public_pipeline_call_wall"
EXIT_FAILED = 1
EXIT_MISSING = 7
EXIT_ORPHANED = 130
PARENT_PIPE = "--parent-pipe"

DTYPES = {
    "f16": "<f2", "f32": "<f4", "f64": "<f8",
    "i8": "i1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
    "u8": "u1", "u16": "<u2", "u32": "<u4", "u64": "<u8", "bool": "?",
}


class ReferenceFailure(Exception):
    """A failure the result records (status error) with this message."""


class MissingFramework(ReferenceFailure):
    """The framework of the runner is not installed (exit code 7)."""


def load_request(path):
    with open(path, encoding="utf-8") as f:
        request = json.load(f)
    if request.get("schema") != REQUEST_SCHEMA:
        raise ReferenceFailure(f"{path} is not a {REQUEST_SCHEMA} document (schema {request.get('schema')!r})")
    for key in ("model", "inputs", "warmup", "iterations", "precision", "threads", "seed"):
        if key not in request:
            raise ReferenceFailure(f"{path} lacks `{key}`")
    if int(request["iterations"]) < 1:
        raise ReferenceFailure("iterations must be at least 1")
    if int(request["threads"]) < 1:
        raise ReferenceFailure("threads must be at least 1")
    base = os.path.dirname(os.path.abspath(path))
    for key in ("model", "inputs"):
        if not os.path.isabs(request[key]):
            request[key] = os.path.join(base, request[key])
    return request


def read_tensor_set(index_path, kind="inputs"):
    """The tensors of a raw-binary JSON index, as (name, numpy array) in index order."""
    with open(index_path, encoding="utf-8") as f:
        index = json.load(f)
    entries = index.get(kind)
    if not isinstance(entries, list):
        raise ReferenceFailure(f"{index_path} has no `{kind}` list")
    base = os.path.dirname(os.path.abspath(index_path))
    tensors = []
    for e in entries:
        tensors.append((e["name"], _read_entry(base, e, f"{index_path}: tensor")))
    return tensors


def _read_entry(base, e, what):
    """The array of one index entry (its raw binary beside the index), `what` naming it in failures."""
    import numpy as np

    dtype = DTYPES.get(e.get("dtype"))
    if dtype is None:
        raise ReferenceFailure(f"{what} {e.get('name')!r} has unknown dtype {e.get('dtype')!r}")
    shape = [int(d) for d in e["shape"]]
    data = np.fromfile(os.path.join(base, e["file"]), dtype=np.dtype(dtype))
    if data.size != math.prod(shape):
        raise ReferenceFailure(
            f"{e['file']} holds {data.size} values, shape {shape} needs {math.prod(shape)}")
    return data.reshape(shape)


def read_call_inputs(index_path):
    """A runner's per-call inputs (`operation-inputs.json`): a list of {"tensors": {name: array},
    "values": {...}}, one per distinct call; call i uses entry i % len."""
    try:
        with open(index_path, encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        raise ReferenceFailure(f"cannot read the operation inputs {index_path}: {e}")
    calls = index.get("calls") if isinstance(index, dict) else None
    if not isinstance(calls, list) or not calls:
        raise ReferenceFailure(f"{index_path} has no `calls` list")
    base = os.path.dirname(os.path.abspath(index_path))
    out = []
    for i, c in enumerate(calls):
        tensors = {}
        for e in c.get("tensors", []):
            tensors[e["name"]] = _read_entry(base, e, f"{index_path}: call {i} tensor")
        out.append({"tensors": tensors, "values": c.get("values") or {}})
    return out


def write_tensor_set(directory, kind, tensors):
    """Writes (name, array) pairs as raw little-endian binaries plus `<kind>.json`."""
    import numpy as np

    names = {np.dtype(v).str: k for k, v in DTYPES.items()}
    os.makedirs(directory, exist_ok=True)
    entries = []
    for i, (name, array) in enumerate(tensors):
        array = np.ascontiguousarray(array)
        dtype = names.get(array.dtype.newbyteorder("<").str) or names.get(array.dtype.str)
        if dtype is None:
            raise ReferenceFailure(f"output {name!r} has dtype {array.dtype}, which the index cannot name")
        file = f"{kind}-{i}.bin"
        array.astype(np.dtype(DTYPES[dtype]), copy=False).tofile(os.path.join(directory, file))
        entries.append({"name": name, "dtype": dtype, "shape": list(array.shape), "file": file})
    write_json_atomic(os.path.join(directory, f"{kind}.json"), {kind: entries})


def precision_of(dtypes):
    """fp32 / fp16 / bf16 / fp64 from the floating-point element types the model consumes."""
    floats = {d for d in dtypes if d in ("float32", "float16", "bfloat16", "float64")}
    names = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}
    if not floats:
        return "fp32"  # integer-only inputs: the graph's float math is the model's own (fp32 here)
    if len(floats) > 1:
        return "mixed(" + ",".join(sorted(names[f] for f in floats)) + ")"
    return names[floats.pop()]


def check_finite(outputs, names):
    """Raises ReferenceFailure when any floating output holds NaN or infinity."""
    import numpy as np

    for name, value in zip(names, outputs):
        array = np.asarray(value)
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            bad = int(array.size - np.isfinite(array).sum())
            raise ReferenceFailure(
                f"output {name!r} holds {bad} non-finite value(s): a reference failure, not a result")


def timed_loop(call, warmup, iterations, min_duration_s, names, items=1):
    """Warm-ups, then timed calls until both `iterations` and `min_duration_s` are reached; each
    observation records `items`, the items one call handles.

    `call()` is one framework call and returns its outputs (a list of arrays, in `names` order); it is
    the only thing between the two clock reads. Returns (warmup_ms, observations, last outputs)."""
    warmup_ms = []
    outputs = None
    for _ in range(warmup):
        t0 = time.perf_counter_ns()
        outputs = call()
        warmup_ms.append((time.perf_counter_ns() - t0) / 1e6)
        check_finite(outputs, names)
    observations = []
    min_ns = int(max(0.0, float(min_duration_s)) * 1e9)
    origin = time.perf_counter_ns()
    while True:
        t0 = time.perf_counter_ns()
        outputs = call()
        t1 = time.perf_counter_ns()
        observations.append({"iteration": len(observations), "start_ns": t0 - origin, "wall_ns": t1 - t0, "items": items})
        check_finite(outputs, names)
        if len(observations) >= iterations and t1 - origin >= min_ns:
            return warmup_ms, observations, outputs


def write_json_atomic(path, doc):
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def result(runtime, version, requested_precision):
    return {
        "schema": RESULT_SCHEMA,
        "status": "error",
        "error": None,
        "runtime": {"name": runtime, "version": version},
        "boundary": BOUNDARY,
        "precision": None,
        "requested_precision": requested_precision,
        "load_ms": None,
        "warmup_ms": [],
        "observations": [],
        "notes": {},
    }


def watch_parent_pipe():
    """Ends this process with EXIT_ORPHANED when standard input, the orchestrator's pipe, reaches its
    end. A daemon thread blocked in read(2) holds no GIL, and os._exit needs no cooperation from the
    main thread, which may be inside a framework call or a sleep."""

    def wait():
        try:
            while os.read(0, 64):
                pass
        except OSError:
            pass
        print("reference: the orchestrator is gone (its pipe closed); stopping", file=sys.stderr, flush=True)
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=wait, name="parent-pipe", daemon=True).start()


def main(runtime, execute):
    """Command line: RUNNER [--parent-pipe] REQUEST.json RESULT.json. `execute(request, result)` fills
    `result` (status ok) or raises ReferenceFailure; the result file is written either way (unless the
    orchestrator ends first, see --parent-pipe)."""
    args = [a for a in sys.argv[1:] if a != PARENT_PIPE]
    if len(args) != 2:
        print(f"usage: {os.path.basename(sys.argv[0])} [{PARENT_PIPE}] REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    if PARENT_PIPE in sys.argv[1:]:
        watch_parent_pipe()
    request_path, result_path = args
    doc = result(runtime, "unknown", None)
    code = 0
    try:
        request = load_request(request_path)
        doc["requested_precision"] = request["precision"]
        execute(request, doc)
        if doc["precision"] != request["precision"]:
            raise ReferenceFailure(
                f"the reference ran at {doc['precision']}, {request['precision']} was requested: "
                "a contract mismatch, not a result")
        doc["status"] = "ok"
    except MissingFramework as e:
        doc["error"], code = str(e), EXIT_MISSING
    except ReferenceFailure as e:
        doc["error"], code = str(e), EXIT_FAILED
    except Exception as e:  # the framework's own errors: recorded, never a traceback-only crash
        doc["error"], code = f"{type(e).__name__}: {e}", EXIT_FAILED
    if doc["status"] != "ok":
        doc["observations"] = []
        print(f"reference error: {doc['error']}", file=sys.stderr)
    write_json_atomic(result_path, doc)
    return code
