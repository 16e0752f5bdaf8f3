"""Tokenizing for the text references (encode, rerank), inside their timed calls as trtmc's runners do.

The candidate saves, for each distinct call, its texts, its tokenizer (`{"kind": "bytes"}` or
`{"kind": "file", "path": …}` with the `bos`/`eos`/`pad` ids the runner adds) and the bundle's sequence
length (`seq_len`, null when the model's length is dynamic), beside the token ids it fed. The reference
tokenizes the texts itself, the same way (crates/runtime/src/tokenize.rs and the two runners), and first
checks that its ids equal the candidate's: a mismatch is a reference failure, not a slower or faster
result.
"""

import numpy as np

import trtmc_reference as ref

BYTE_OFFSET = 3
TOKENIZERS_INSTALL = "pip install tokenizers==0.22.2"


class Tokenizer:
    """Token ids without special tokens: one per UTF-8 byte (`bytes`), or a Hugging Face tokenizer.json
    read with the `tokenizers` package (the Python face of the crate trtmc uses)."""

    def __init__(self, spec, operation):
        kind = spec.get("kind")
        self.bos, self.eos, self.pad = int(spec["bos"]), int(spec["eos"]), int(spec["pad"])
        self.file = None
        if kind == "bytes":
            self.name = "bytes"
        elif kind == "file":
            try:
                import tokenizers
            except ImportError as e:
                raise ref.MissingFramework(
                    f"operation {operation!r} tokenizes with {spec['path']}, which needs the Python "
                    f"`tokenizers` package ({e}): {TOKENIZERS_INSTALL}")
            try:
                self.file = tokenizers.Tokenizer.from_file(spec["path"])
            except Exception as e:  # the package raises its own exception types
                raise ref.ReferenceFailure(f"cannot read tokenizer {spec['path']}: {e}")
            self.name = f"tokenizers {tokenizers.__version__}: {spec['path']}"
        else:
            raise ref.ReferenceFailure(f"operation {operation!r}: unknown tokenizer kind {kind!r}")

    def encode(self, text):
        if self.file is None:
            return [b + BYTE_OFFSET for b in text.encode("utf-8")]
        return self.file.encode(text, add_special_tokens=False).ids


def encode_batch(tok, texts, seq_len):
    """`BOS text EOS` per text, padded to the longest (or to `seq_len`; a longer text is cut and keeps
    its end token): (input_ids, attention_mask), as the encode runner builds them."""
    rows = [[tok.bos, *tok.encode(t), tok.eos] for t in texts]
    length = seq_len or max((len(r) for r in rows), default=1)
    ids = np.full((len(rows), length), tok.pad, dtype=np.int64)
    mask = np.zeros((len(rows), length), dtype=np.int64)
    for i, row in enumerate(rows):
        n = min(len(row), length)
        ids[i, :n] = row[:n]
        if len(row) > length:
            ids[i, length - 1] = tok.eos
        mask[i, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def pair_batch(tok, query, documents, seq_len):
    """`BOS query EOS document EOS` per document, padded to the longest (or cut to `seq_len`), with
    token types 1 over the document part: (input_ids, attention_mask, token_type_ids), as the rerank
    runner builds them."""
    head = [tok.bos, *tok.encode(query), tok.eos]
    rows = [head + tok.encode(d) + [tok.eos] for d in documents]
    length = seq_len or max((len(r) for r in rows), default=1)
    ids = np.full((len(rows), length), tok.pad, dtype=np.int64)
    mask = np.zeros((len(rows), length), dtype=np.int64)
    types = np.zeros((len(rows), length), dtype=np.int64)
    for i, row in enumerate(rows):
        n = min(len(row), length)
        ids[i, :n] = row[:n]
        mask[i, :n] = 1
        types[i, len(head):n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def text_calls(ctx, operation, tokenize):
    """For each saved call, a function that tokenizes its texts and returns the model's feeds, after
    checking once that those feeds equal the ids the candidate fed. `tokenize(tok, values)` builds the
    named arrays. Returns (feed functions in call order, tokenizer description)."""
    declared = [i.name for i in ctx.session.get_inputs()]
    tokenizers = {}
    prepared = []
    for index, call in enumerate(ctx.require_calls(operation)):
        values = call["values"]
        for needed in ("texts", "tokenizer"):
            if needed not in values:
                raise ref.ReferenceFailure(
                    f"operation {operation!r}: the saved call {index} lacks {needed!r}, so the reference "
                    "cannot tokenize as the candidate does (inputs saved by an older trtmc: save them again)")
        key = repr(sorted(values["tokenizer"].items()))
        if key not in tokenizers:
            tokenizers[key] = Tokenizer(values["tokenizer"], operation)
        tok = tokenizers[key]

        def feeds(tok=tok, values=values):
            arrays = tokenize(tok, values)
            # Any other input the encoder declares gets zeros, as the encode runner feeds it.
            return {n: arrays[n] if n in arrays else np.zeros_like(arrays["input_ids"]) for n in declared}

        ours = feeds()
        for name in declared:
            saved = call["tensors"].get(name)
            if saved is None:
                raise ref.ReferenceFailure(
                    f"operation {operation!r}: the saved call {index} lacks the model input {name!r}")
            if saved.shape != ours[name].shape or not np.array_equal(saved, ours[name]):
                raise ref.ReferenceFailure(
                    f"operation {operation!r}, call {index}: the reference's {name} ({tok.name}) differs "
                    f"from the candidate's (shapes {list(ours[name].shape)} and {list(saved.shape)}): the "
                    "two tokenizers disagree, so the two sides would not run the same workload; use the "
                    f"tokenizers version trtmc uses ({TOKENIZERS_INSTALL})")
        prepared.append(feeds)
    description = "; ".join(sorted(t.name for t in tokenizers.values()))
    return prepared, description
