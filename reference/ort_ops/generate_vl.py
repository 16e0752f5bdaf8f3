"""`generate_vl`: `generate`'s token loop whose prefill carries the image's patches (saved by the candidate
as `image_patches`, cut before timing as trtmc's runner cuts them)."""

from ort_ops import generate


def prepare(ctx):
    return generate.prepare(ctx, "generate_vl")
