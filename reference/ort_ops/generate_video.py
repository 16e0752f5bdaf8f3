"""`generate_video`: the same diffusion loop as `generate_image`, over the frames of one clip denoised
together (the saved noise is [frames, channels, height, width])."""

from ort_ops import generate_image


def prepare(ctx):
    return generate_image.prepare(ctx, "generate_video")


notes = generate_image.notes
