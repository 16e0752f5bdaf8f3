"""`convert_speech`: the decoded, frame-padded WAV audio trtmc prepared through the speech-to-speech
model into a new waveform; `generated_samples` counts the samples of the last call."""

from ort_ops import _media


def prepare(ctx):
    call_inputs = _media.single_call(ctx, "convert_speech")
    feeds = _media.model_feeds(ctx, call_inputs, "convert_speech")
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        outputs = ctx.session.run(None, feeds)
        ctx.notes["generated_samples"] = int(outputs[0].size)
        return outputs

    return call, names
