"""`encode`: one forward pass of the tokenized batch, as trtmc's runner does (crates/runtime/src/ops/encode.rs).

The candidate saves the batch as it feeds it (`input_ids`, `attention_mask`, zero `token_type_ids`, by the
encoder's input names), so no tokenizer is needed here; tokenizing (microseconds) stays outside this timed
call. The embeddings are the model's `embeddings` output (else its first), pooled and normalised by the
graph itself, exactly as the runner takes them (the runner adds no pooling of its own). Notes: items.
"""

import trtmc_reference as ref


def prepare(ctx):
    call_inputs = ctx.require_calls("encode")[0]
    tensors = call_inputs["tensors"]
    declared = [i.name for i in ctx.session.get_inputs()]
    missing = [n for n in declared if n not in tensors]
    if missing:
        raise ref.ReferenceFailure(
            f"the per-call inputs of `encode` lack {', '.join(missing)} (saved: {', '.join(tensors) or 'none'})")
    feeds = {n: tensors[n] for n in declared}
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        return ctx.session.run(None, feeds)

    ctx.notes["items"] = int(feeds[declared[0]].shape[0])
    # The candidate tokenizes inside its call; this reference cannot (no tokenizer here): say so.
    ctx.notes["tokenization"] = "outside the timed call (the candidate's token ids)"
    return call, names
