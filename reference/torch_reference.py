#!/usr/bin/env python3
"""PyTorch as the reference, where it is installed: the ONNX model converted with onnx2torch and called
under torch.inference_mode(), timed per call.

usage: python3 reference/torch_reference.py REQUEST.json RESULT.json

Needs torch and onnx2torch (pip install torch onnx2torch); without them the result says so and the
exit code is 7. `threads` sets torch.set_num_threads. See trtmc_reference.py for the protocol.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trtmc_reference as ref  # noqa: E402

INSTALL = "pip install torch onnx2torch"


def execute(request, doc):
    try:
        import onnx
        import torch
        from onnx2torch import convert
    except ImportError as e:
        raise ref.MissingFramework(f"PyTorch reference needs torch, onnx2torch and onnx ({e}): {INSTALL}")
    doc["runtime"]["version"] = torch.__version__
    torch.set_num_threads(int(request["threads"]))
    inputs = ref.read_tensor_set(request["inputs"])
    t0 = time.perf_counter_ns()
    model = onnx.load(request["model"])
    module = convert(model).eval()
    doc["load_ms"] = (time.perf_counter_ns() - t0) / 1e6
    graph_inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    given = dict(inputs)
    missing = [n for n in graph_inputs if n not in given]
    if missing:
        raise ref.ReferenceFailure(f"the inputs lack {', '.join(missing)}")
    tensors = [torch.from_numpy(given[n].copy()) for n in graph_inputs]
    torch_names = {torch.float32: "float32", torch.float16: "float16", torch.float64: "float64",
                   torch.bfloat16: "bfloat16"}
    doc["precision"] = ref.precision_of(torch_names.get(t.dtype, str(t.dtype)) for t in tensors)
    names = [o.name for o in model.graph.output]

    def call():
        with torch.inference_mode():
            out = module(*tensors)
        out = out if isinstance(out, (list, tuple)) else [out]
        return [o.numpy() for o in out]

    warmup_ms, observations, outputs = ref.timed_loop(
        call, int(request["warmup"]), int(request["iterations"]), float(request.get("min_duration_s", 0.0)), names)
    doc["warmup_ms"] = warmup_ms
    doc["observations"] = observations
    doc["notes"] = {"torch_threads": torch.get_num_threads(), "converter": "onnx2torch"}
    if request.get("save_outputs"):
        ref.write_tensor_set(request["save_outputs"], "outputs", list(zip(names, outputs)))


if __name__ == "__main__":
    sys.exit(ref.main("pytorch", execute))
