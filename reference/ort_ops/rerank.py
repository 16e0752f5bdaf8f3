"""`rerank`: tokenize the (query, document) pairs, run one cross-encoder call and sort the documents by
score, as trtmc's runner does (crates/runtime/src/ops/rerank.rs): tokenizing and the sort are inside the
timed call on both sides.

The candidate saves each distinct call's query, documents, tokenizer and sequence length beside the pairs
it fed (`BOS query EOS document EOS`, padded; `input_ids`, `attention_mask`, `token_type_ids` by the
cross-encoder's input names); the reference tokenizes the pairs itself (ort_ops/_text.py) after checking
that its ids equal those. The sort is stable, highest score first, as the runner's. Notes: documents,
ranking (document indices, best first, of the last call), tokenization.
"""

import numpy as np

import trtmc_reference as ref
from ort_ops import _media, _text


def prepare(ctx):
    feeds, tokenizer = _text.text_calls(
        ctx, "rerank", lambda tok, v: _text.pair_batch(tok, v["query"], v["texts"], v.get("seq_len")))
    # Each distinct call's pairs (document lists rotating across calls at batch size 1), with the
    # count of documents the scores must cover.
    counts = [len(c["values"]["texts"]) for c in ctx.require_calls("rerank")]
    next_call = _media.cycle(list(zip(feeds, counts)))
    names = [o.name for o in ctx.session.get_outputs()]
    ranking = []

    def call():
        tokenize, documents = next_call()
        outputs = ctx.session.run(None, tokenize())
        scores = outputs[0].reshape(-1)
        if scores.size != documents:
            raise ref.ReferenceFailure(f"the cross-encoder returned {scores.size} scores for {documents} documents")
        ranking[:] = np.argsort(-scores, kind="stable").tolist()
        return outputs

    ctx.notes["documents"] = ctx.items = counts[0]
    ctx.notes["ranking"] = ranking
    ctx.notes["tokenization"] = f"inside the timed call ({tokenizer})"
    return call, names
