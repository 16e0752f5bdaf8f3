"""`encode`: one forward pass of the tokenized batch, as trtmc's runner does (crates/runtime/src/ops/encode.rs).

The candidate saves the batch as it feeds it (`input_ids`, `attention_mask`, zero `token_type_ids`, by the
encoder's input names), so no tokenizer is needed here; tokenizing (microseconds) stays outside this timed
call. The embeddings are the model's `embeddings` output (else its first), pooled and normalised by the
graph itself, exactly as the runner takes them (the runner adds no pooling of its own). Notes: items.
"""

from ort_ops import _media


def prepare(ctx):
    # Each distinct call's batch (texts rotating across calls at batch size 1), in the runner's order.
    next_feeds = _media.rotation(ctx, "encode", lambda c: _media.model_feeds(ctx, c, "encode"))
    first = ctx.require_calls("encode")[0]
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        return ctx.session.run(None, next_feeds())

    ctx.notes["items"] = int(next(iter(first["tensors"].values())).shape[0])
    # The candidate tokenizes inside its call; this reference cannot (no tokenizer here): say so.
    ctx.notes["tokenization"] = "outside the timed call (the candidate's token ids)"
    return call, names
