"""`generate_audio`: the seeded latent frames trtmc drew (its own RNG, saved) through the vocoder into a
waveform; `generated_samples` counts the samples of the last call."""

from ort_ops import _media


def prepare(ctx):
    call_inputs = _media.single_call(ctx, "generate_audio")
    feeds = _media.model_feeds(ctx, call_inputs, "generate_audio")
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        outputs = ctx.session.run(None, feeds)
        ctx.notes["generated_samples"] = int(outputs[0].size)
        return outputs

    return call, names
