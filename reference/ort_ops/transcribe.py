"""`transcribe`: the chunks trtmc prepared (one for offline, one per `chunk_ms` for streaming) through
the CTC acoustic model in order, greedy CTC decoding (arg-max label per frame, repeats collapsed across
chunk boundaries, blanks dropped) after every chunk, as trtmc's runner does inside its call.

With several declared recordings the saved inputs hold one call each and the calls rotate through them.

Notes: `token_ids` and `chunks` of the last call, and `first_partial_ms` (call start to the first chunk's
partial transcript) of every call in order, warm-ups first."""

import time

import numpy as np

import trtmc_reference as ref
from ort_ops import _media


def recording(call_inputs, op):
    """One saved call's chunks, in order."""
    count = int(_media.value(call_inputs, "chunks", op))
    chunks = [_media.tensor(call_inputs, f"chunk{i}", op) for i in range(count)]
    if not chunks:
        raise ref.ReferenceFailure("transcribe needs at least one saved audio chunk")
    return chunks


def prepare(ctx):
    op = "transcribe"
    first = ctx.require_calls(op)[0]
    input_name = _media.value(first, "input", op)
    blank = int(_media.value(first, "blank", op))
    declared = [i.name for i in ctx.session.get_inputs()]
    if declared != [input_name]:
        raise ref.ReferenceFailure(
            f"the acoustic model must take one input, {input_name!r}; it declares {', '.join(declared)}")
    # One saved entry per declared recording: call i transcribes entry i % n, as the runner does.
    next_chunks = _media.rotation(ctx, op, lambda c: recording(c, op))
    names = [o.name for o in ctx.session.get_outputs()]
    first_partial_ms = []
    ctx.notes["first_partial_ms"] = first_partial_ms

    def call():
        chunks = next_chunks()
        ctx.notes["chunks"] = len(chunks)
        started = time.perf_counter_ns()
        tokens = []
        prev = blank
        outputs = None
        for i, chunk in enumerate(chunks):
            outputs = ctx.session.run(None, {input_name: chunk})
            logits = outputs[0]
            labels = np.argmax(logits.reshape(-1, max(logits.shape[-1], 1)), axis=1).tolist()
            for label in labels:
                if label != blank and label != prev:
                    tokens.append(label)
                prev = label
            if i == 0:
                first_partial_ms.append((time.perf_counter_ns() - started) / 1e6)
        ctx.notes["token_ids"] = tokens
        return outputs

    return call, names
