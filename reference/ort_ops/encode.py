"""`encode`: tokenize a batch of texts and run one forward pass, as trtmc's runner does
(crates/runtime/src/ops/encode.rs): tokenizing is inside the timed call on both sides.

The candidate saves each distinct call's texts, tokenizer and sequence length beside the token ids it fed
(`input_ids`, `attention_mask`, zero `token_type_ids`, by the encoder's input names); the reference
tokenizes the texts itself (ort_ops/_text.py) after checking that its ids equal those. The embeddings are
the model's `embeddings` output (else its first), pooled and normalised by the graph itself, exactly as the
runner takes them (the runner adds no pooling of its own). Notes: items, tokenization.
"""

from ort_ops import _media, _text


def prepare(ctx):
    calls, tokenizer = _text.text_calls(
        ctx, "encode", lambda tok, v: _text.encode_batch(tok, v["texts"], v.get("seq_len")))
    # Each distinct call's texts (rotating across calls at batch size 1), in the runner's order.
    next_feeds = _media.cycle(calls)
    first = ctx.require_calls("encode")[0]
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        return ctx.session.run(None, next_feeds()())

    ctx.notes["items"] = ctx.items = len(first["values"]["texts"])
    ctx.notes["tokenization"] = f"inside the timed call ({tokenizer})"
    return call, names
