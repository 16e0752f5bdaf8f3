#!/usr/bin/env python3
"""ONNX Runtime's own Python loop as the reference: `InferenceSession.run` timed per call.

usage: python3 reference/ort_reference.py [--parent-pipe] REQUEST.json RESULT.json

Options (request `options`): graph_optimization_level disable|basic|extended|layout|all (default all),
execution_mode sequential|parallel (default sequential), inter_threads (default 1). `threads` sets
intra_op_num_threads. Test-only (honoured with TRTMC_TEST=1): test_noise_scale multiplies the saved diffusion noise (a value
beyond float32, e.g. 1e39, makes infinities, to exercise the non-finite check); test_call_delay_s sleeps
that many seconds inside every call (a slow reference, to exercise --parent-pipe). See trtmc_reference.py
for the protocol.

A request with `profile_dir` runs with ONNX Runtime's profiler on (SessionOptions.enable_profiling): the
trace is written into that folder and named in the result's notes (`profile_trace`, with
`profile_warmup_runs`, the session runs before the timed calls, which a reader drops). The matrix asks
for it once per yellow or red row, outside its timed rounds (docs/matrix.md).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_ops  # noqa: E402
import trtmc_reference as ref  # noqa: E402

INSTALL = "pip install onnxruntime==1.31.1 numpy"


def read_calls(request):
    """The candidate's per-call inputs (`operation_inputs`), or none."""
    path = request.get("operation_inputs")
    if not path:
        return []
    if not os.path.isabs(path):
        path = os.path.join(os.path.dirname(os.path.abspath(request["inputs"])), path)
    return ref.read_call_inputs(path)


def with_test_delay(call, options):
    """`call`, slowed by the test-only option test_call_delay_s (honoured only with TRTMC_TEST=1)."""
    delay = options.get("test_call_delay_s")
    if delay is None:
        return call
    if os.environ.get("TRTMC_TEST") != "1":
        raise ref.ReferenceFailure("option test_call_delay_s is a test hook: it is honoured only with TRTMC_TEST=1")

    def slowed():
        time.sleep(float(delay))
        return call()

    return slowed


def execute(request, doc):
    try:
        import numpy as np  # noqa: F401
        import onnxruntime as ort
    except ImportError as e:
        raise ref.MissingFramework(f"ONNX Runtime for Python is not installed ({e}): {INSTALL}")
    doc["runtime"]["version"] = ort.__version__
    options = request.get("options") or {}
    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    if hasattr(ort.GraphOptimizationLevel, "ORT_ENABLE_LAYOUT"):
        levels["layout"] = ort.GraphOptimizationLevel.ORT_ENABLE_LAYOUT
    level = options.get("graph_optimization_level", "all")
    if level not in levels:
        raise ref.ReferenceFailure(f"graph_optimization_level must be one of {', '.join(levels)}, got {level!r}")
    so = ort.SessionOptions()
    so.graph_optimization_level = levels[level]
    so.intra_op_num_threads = int(request["threads"])
    so.inter_op_num_threads = int(options.get("inter_threads", 1))
    mode = options.get("execution_mode", "sequential")
    if mode not in ("sequential", "parallel"):
        raise ref.ReferenceFailure(f"execution_mode must be sequential or parallel, got {mode!r}")
    so.execution_mode = (ort.ExecutionMode.ORT_PARALLEL if mode == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL)
    profile_dir = request.get("profile_dir")
    if profile_dir:
        os.makedirs(profile_dir, exist_ok=True)
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(profile_dir, "ort-profile")

    inputs = ref.read_tensor_set(request["inputs"])
    t0 = time.perf_counter_ns()
    session = ort.InferenceSession(request["model"], sess_options=so, providers=["CPUExecutionProvider"])
    doc["load_ms"] = (time.perf_counter_ns() - t0) / 1e6

    declared = {i.name: i.type for i in session.get_inputs()}
    calls = read_calls(request)
    feeds = {name: array for name, array in inputs if name in declared}
    onnx_types = {"tensor(float)": "float32", "tensor(float16)": "float16",
                  "tensor(double)": "float64", "tensor(bfloat16)": "bfloat16"}
    doc["precision"] = ref.precision_of(onnx_types.get(t, t) for t in declared.values())
    operation = request.get("operation", "infer")
    ctx = ort_ops.OperationContext(session, feeds, request.get("request") or {}, calls)
    ctx.options = options
    module = ort_ops.load(operation)
    call, names = module.prepare(ctx)
    call = with_test_delay(call, options)
    # After `prepare`, which names the per-call inputs an operation lacks: an operation with them may
    # come without bundle inputs (their dimensions unbound), the others need every declared input.
    missing = [n for n in declared if n not in feeds]
    if missing and (inputs or not calls):
        raise ref.ReferenceFailure(f"the inputs lack {', '.join(missing)} (given: {', '.join(n for n, _ in inputs)})")

    warmup_ms, observations, outputs = ref.timed_loop(
        call, int(request["warmup"]), int(request["iterations"]), float(request.get("min_duration_s", 0.0)), names,
        int(ctx.items))
    if hasattr(module, "notes"):
        module.notes(ctx, outputs)
    doc["warmup_ms"] = warmup_ms
    doc["observations"] = observations
    doc["notes"] = {
        "operation": operation,
        "graph_optimization_level": level,
        "execution_mode": mode,
        "intra_op_num_threads": int(request["threads"]),
        "providers": session.get_providers(),
        **ctx.notes,
    }
    if profile_dir:
        doc["notes"]["profile_trace"] = os.path.abspath(session.end_profiling())
        doc["notes"]["profile_warmup_runs"] = int(request["warmup"])
    if request.get("save_outputs"):
        ref.write_tensor_set(request["save_outputs"], "outputs", list(zip(names, outputs)))


if __name__ == "__main__":
    sys.exit(ref.main("onnxruntime-python", execute))
