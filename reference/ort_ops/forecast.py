"""`forecast`: one forward pass over the batch of seeded history windows [batch, window, channels]
trtmc prepared, the forecasts [batch, horizon, channels] out (trtmc's runner rolls one window batch per
call)."""

from ort_ops import _media


def prepare(ctx):
    call_inputs = _media.single_call(ctx, "forecast")
    feeds = _media.model_feeds(ctx, call_inputs, "forecast")
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        return ctx.session.run(None, feeds)

    return call, names
