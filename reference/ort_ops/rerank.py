"""`rerank`: one cross-encoder call on the tokenized (query, document) pairs and the documents sorted by
score, as trtmc's runner does (crates/runtime/src/ops/rerank.rs).

The candidate saves the pairs as it feeds them (`input_ids`, `attention_mask`, `token_type_ids`, by the
cross-encoder's input names: `BOS query EOS document EOS`, padded), so no tokenizer is needed here;
tokenizing stays outside this timed call. The sort is inside it, stable and highest score first as the
runner's. Notes: documents, ranking (document indices, best first, of the last call).
"""

import numpy as np

import trtmc_reference as ref


def prepare(ctx):
    call_inputs = ctx.require_calls("rerank")[0]
    tensors, values = call_inputs["tensors"], call_inputs["values"]
    declared = [i.name for i in ctx.session.get_inputs()]
    missing = [n for n in declared if n not in tensors]
    if missing:
        raise ref.ReferenceFailure(
            f"the per-call inputs of `rerank` lack {', '.join(missing)} (saved: {', '.join(tensors) or 'none'})")
    feeds = {n: tensors[n] for n in declared}
    documents = int(values.get("documents", feeds[declared[0]].shape[0]))
    names = [o.name for o in ctx.session.get_outputs()]
    ranking = []

    def call():
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
