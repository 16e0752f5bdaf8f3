"""ONNX Runtime references, one module per operation (`infer.py`, `classify.py`, …).

Each module defines `prepare(ctx)`, called once before timing, which returns `(call, names)`:
`call()` is exactly one public call of the operation (the loop the operation runs around
`InferenceSession.run`, with the same post-processing as trtmc's runner) and returns its outputs as a
list of arrays; `names` names them (non-finite values fail the reference; `save_outputs` saves the last
call's). `ctx` is an `OperationContext`. An optional `notes(ctx, outputs)` records facts about the last
call's outputs after the timed loop, outside the clock.
"""

import importlib

import trtmc_reference as ref


class OperationContext:
    """What an operation's reference is prepared from.

    session   the ONNX Runtime session of the request's model
    feeds     the bundle's synthesized inputs, by name, restricted to the model's declared inputs
    request   the resolved case's request values (prompt, max_new_tokens, batch_size, …)
    calls     the candidate runner's per-call inputs, `[{"tensors": {name: array}, "values": {…}}]`:
              call i uses calls[i % len(calls)] (empty for infer and classify)
    notes     facts for the result's notes (e.g. the output token count)
    items     the items one call handles (a batch's images, texts, documents), recorded with every
              observation as trtmc's runner records them; 1 unless the operation's module sets it
    options   the request's runner options (graph_optimization_level, …, test-only knobs)
    """

    def __init__(self, session, feeds, request, calls):
        self.session = session
        self.feeds = feeds
        self.request = request
        self.calls = calls
        self.notes = {}
        self.options = {}
        self.items = 1

    def require_calls(self, operation):
        """The per-call inputs, or a failure saying the request lacks them."""
        if not self.calls:
            raise ref.ReferenceFailure(
                f"operation {operation!r} needs the candidate's per-call inputs (operation_inputs in the "
                "request): save them with `trtmc-bench compare --save-inputs DIR`")
        return self.calls


def load(operation):
    """The module of `operation`, or a reference failure naming the operations that have one."""
    if not operation.isidentifier():
        raise ref.ReferenceFailure(f"operation {operation!r} is not a valid operation name")
    try:
        return importlib.import_module(f"ort_ops.{operation}")
    except ModuleNotFoundError as e:
        if e.name != f"ort_ops.{operation}":
            raise
        raise ref.ReferenceFailure(
            f"operation {operation!r} has no ONNX Runtime reference here (it has: {', '.join(available())})")


def available():
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(f[:-3] for f in os.listdir(here) if f.endswith(".py") and not f.startswith("_"))
