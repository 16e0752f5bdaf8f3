"""`rerank`: one cross-encoder call on the tokenized (query, document) pairs and the documents sorted by
score, as trtmc's runner does (crates/runtime/src/ops/rerank.rs).

The candidate saves the pairs as it feeds them (`input_ids`, `attention_mask`, `token_type_ids`, by the
cross-encoder's input names: `BOS query EOS document EOS`, padded), so no tokenizer is needed here;
tokenizing stays outside this timed call. The sort is inside it, stable and highest score first as the
runner's. Notes: documents, ranking (document indices, best first, of the last call).
"""

import numpy as np

import trtmc_reference as ref
from ort_ops import _media


def prepare(ctx):
    # Each distinct call's pairs (document lists rotating across calls at batch size 1), with the
    # count of documents the scores must cover.
    def prepare_call(c):
        feeds = _media.model_feeds(ctx, c, "rerank")
        return feeds, int(c["values"].get("documents", next(iter(feeds.values())).shape[0]))

    next_call = _media.rotation(ctx, "rerank", prepare_call)
    documents = prepare_call(ctx.require_calls("rerank")[0])[1]
    names = [o.name for o in ctx.session.get_outputs()]
    ranking = []

    def call():
        feeds, documents = next_call()
        outputs = ctx.session.run(None, feeds)
        scores = outputs[0].reshape(-1)
        if scores.size != documents:
            raise ref.ReferenceFailure(f"the cross-encoder returned {scores.size} scores for {documents} documents")
        ranking[:] = np.argsort(-scores, kind="stable").tolist()
        return outputs

    ctx.notes["documents"] = documents
    ctx.notes["ranking"] = ranking
    # The candidate tokenizes inside its call; this reference cannot (no tokenizer here): say so.
    ctx.notes["tokenization"] = "outside the timed call (the candidate's token ids)"
    return call, names
