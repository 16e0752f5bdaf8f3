"""`generate`: the token loop with the KV cache, as trtmc's runner does it (crates/runtime/src/ops/generate.rs).

Decoder contract (Hugging Face optimum exports): `input_ids` [1, seq], optional `position_ids` [1, seq],
`attention_mask` [1, total] or additive `attention_bias` [1, 1, seq, total], `past_key_values.<i>.key|value`
[1, heads, past, head_dim] in, `logits` [1, seq, vocab] and `present.<i>.key|value` out; vision-language
decoders also take `image_patches` [1, patches, patch_dim] (the prefill's image, empty afterwards).
The first step runs the prompt (and image) against an empty cache, every later step one token against the
cache the previous step returned. Sampling repeats trtmc's Sampler: greedy argmax, or temperature then
top-k (highest first, ties by token id) and one uniform draw per token, walked in that order; a seeded
case uses the candidate's saved draws (`sampling_uniforms`), so both pick the same tokens.

Per-call inputs (`compare --save-inputs`): tensors `prompt_ids` (BOS included), `image_patches`
(generate_vl), `sampling_uniforms` (seeded sampling); values max_new_tokens, do_sample, temperature,
top_k, seed. Notes: output_tokens (tokens per call, which the matrix checks against the candidate's),
generated_tokens (last call), sampling_seed (last call). One saved entry per declared sample: the
calls rotate through them (call i uses entry i % n), as the runner does.
"""

import numpy as np

import trtmc_reference as ref
from ort_ops import _media

MASKED = np.float32(-1e9)
KNOWN = ("input_ids", "position_ids", "attention_mask", "attention_bias", "image_patches")
NUMPY = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}


def decoder_io(session, operation):
    """The decoder's inputs and outputs, checked as trtmc's DecoderIo checks them."""
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    if "input_ids" not in inputs:
        raise ref.ReferenceFailure("the decoder has no `input_ids` input")
    if "logits" not in outputs:
        raise ref.ReferenceFailure("the decoder has no `logits` output")
    cache = []
    for name, spec in inputs.items():
        if not name.startswith("past_key_values."):
            continue
        present = "present." + name[len("past_key_values."):]
        if present not in outputs:
            raise ref.ReferenceFailure(f"cache input `{name}` has no matching output `{present}`")
        shape = spec.shape
        if len(shape) != 4 or not isinstance(shape[1], int) or not isinstance(shape[3], int):
            raise ref.ReferenceFailure(f"cache input `{name}` {shape} must have fixed heads and head_dim")
        cache.append((name, present, shape[1], shape[3], NUMPY.get(spec.type, np.float32)))
    if not cache:
        raise ref.ReferenceFailure(
            f"the decoder has no `past_key_values.*` inputs: a KV cache is required for `{operation}`")
    unknown = [n for n in inputs if n not in KNOWN and not n.startswith("past_key_values.")]
    if unknown:
        raise ref.ReferenceFailure(
            f"the decoder has inputs `{operation}` does not know how to feed: {', '.join(unknown)}")
    patch_dim = None
    if "image_patches" in inputs:
        shape = inputs["image_patches"].shape
        if len(shape) != 3 or not isinstance(shape[2], int):
            raise ref.ReferenceFailure(f"decoder input `image_patches` {shape} must be [1, patches, patch_dim]")
        patch_dim = shape[2]
    return set(inputs), outputs, cache, patch_dim


class Sampler:
    """trtmc's Sampler: argmax, or temperature + top-k and one uniform draw per token."""

    def __init__(self, values, uniforms):
        self.do_sample = bool(values.get("do_sample", False))
        self.temperature = np.float32(values.get("temperature", 1.0))
        self.top_k = max(0, int(values.get("top_k", 0)))
        self.uniforms = uniforms
        self.unseeded = np.random.default_rng()

    def draws(self):
        return self.do_sample and self.temperature > 0

    def next(self, logits, step):
        if not self.draws():
            return int(np.argmax(logits))
        scaled = logits.astype(np.float32) / self.temperature
        ids = np.arange(scaled.size)
        if 0 < self.top_k < scaled.size:
            order = np.lexsort((ids, -scaled))[: self.top_k]
        else:
            order = ids
        kept = scaled[order]
        weights = np.exp(kept - kept.max()).astype(np.float32)
        # Summed one by one in f32, as the Rust fold does (NumPy's sum is pairwise).
        total = np.cumsum(weights, dtype=np.float32)[-1]
        u = self.uniforms[step] if self.uniforms is not None else np.float32(self.unseeded.random(dtype=np.float32))
        target = np.float32(u) * total
        for w, i in zip(weights, order):
            if target < w:
                return int(i)
            target = np.float32(target - w)
        return int(order[-1])


def call_sample(call_inputs, operation, patch_dim):
    """One saved call's prompt ids, max_new_tokens, image patches (generate_vl), sampler and seed."""
    tensors, values = call_inputs["tensors"], call_inputs["values"]
    if "prompt_ids" not in tensors:
        raise ref.ReferenceFailure(f"the per-call inputs of `{operation}` lack `prompt_ids` (the prompt's token ids)")
    prompt = tensors["prompt_ids"].astype(np.int64).reshape(-1)
    try:
        max_new_tokens = int(values["max_new_tokens"])
    except (KeyError, TypeError, ValueError):
        raise ref.ReferenceFailure(f"the per-call inputs of `{operation}` lack an integer `max_new_tokens`")
    if max_new_tokens < 1:
        raise ref.ReferenceFailure(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    image = None
    if operation == "generate_vl":
        if patch_dim is None:
            raise ref.ReferenceFailure(
                "operation `generate_vl` needs a decoder with an `image_patches` input; this one is text-only")
        if "image_patches" not in tensors:
            raise ref.ReferenceFailure("the per-call inputs of `generate_vl` lack `image_patches` (the image)")
        image = tensors["image_patches"].astype(np.float32)
    uniforms = tensors.get("sampling_uniforms")
    sampler = Sampler(values, uniforms)
    seed = int(values.get("seed", -1))
    if sampler.draws() and seed >= 0:
        if uniforms is None or uniforms.size < max_new_tokens:
            raise ref.ReferenceFailure(
                f"seeded sampling needs {max_new_tokens} saved draws (`sampling_uniforms`), "
                f"the per-call inputs hold {0 if uniforms is None else uniforms.size}")
        sampler.uniforms = uniforms.astype(np.float32).reshape(-1)
    return prompt, max_new_tokens, image, sampler, seed


def prepare(ctx, operation="generate"):
    names, outputs, cache_spec, patch_dim = decoder_io(ctx.session, operation)
    # One saved entry per declared sample (prompt and seed): call i uses entry i % n, as the runner does.
    next_sample = _media.rotation(ctx, operation, lambda c: call_sample(c, operation, patch_dim))
    logits_index = outputs.index("logits")
    present_index = {name: outputs.index(present) for name, present, _, _, _ in cache_spec}
    empty_patches = np.zeros((1, 0, patch_dim or 0), dtype=np.float32)
    last = []

    def call():
        prompt, max_new_tokens, image, sampler, seed = next_sample()
        ctx.notes["sampling_seed"] = seed
        tokens = []
        cache = {name: np.zeros((1, heads, 0, dim), dtype=dtype) for name, _, heads, dim, dtype in cache_spec}
        step_ids = prompt
        past = 0
        for step in range(max_new_tokens):
            feeds = {"input_ids": step_ids.reshape(1, -1)}
            seq = step_ids.size
            if patch_dim is not None:
                patches = image if (image is not None and step == 0) else empty_patches
                seq += patches.shape[1]
                feeds["image_patches"] = patches
            if "position_ids" in names:
                feeds["position_ids"] = np.arange(past, past + seq, dtype=np.int64).reshape(1, seq)
            total = past + seq
            if "attention_mask" in names:
                feeds["attention_mask"] = np.ones((1, total), dtype=np.int64)
            if "attention_bias" in names:
                bias = np.zeros((seq, total), dtype=np.float32)
                rows, cols = np.indices((seq, total))
                bias[cols > past + rows] = MASKED
                feeds["attention_bias"] = bias.reshape(1, 1, seq, total)
            feeds.update(cache)
            out = ctx.session.run(None, feeds)
            row = out[logits_index].reshape(-1, out[logits_index].shape[-1])[-1]
            if not np.isfinite(row).all():
                raise ref.ReferenceFailure(
                    f"output `logits` holds non-finite values (NaN or infinity) at step {step}: a reference failure")
            token = sampler.next(row, step)
            tokens.append(token)
            cache = {name: out[index] for name, index in present_index.items()}
            past = total
            step_ids = np.array([token], dtype=np.int64)
        last[:] = tokens
        ctx.notes["output_tokens"] = len(tokens)
        return [np.array(tokens, dtype=np.int64)]

    ctx.notes["generated_tokens"] = last
    return call, ["tokens"]
