"""`convert_speech`: the decoded, frame-padded WAV audio trtmc prepared through the speech-to-speech
model into a new waveform (several declared recordings: one saved call each, rotated as the runner does);
`generated_samples` counts the samples of the last call."""

from ort_ops import _media


def prepare(ctx):
    # One saved entry per declared recording: call i converts entry i % n, as the runner does.
    next_feeds = _media.rotation(ctx, "convert_speech", lambda c: _media.model_feeds(ctx, c, "convert_speech"))
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        outputs = ctx.session.run(None, next_feeds())
        ctx.notes["generated_samples"] = int(outputs[0].size)
        return outputs

    return call, names
