"""`forecast`: one forward pass over the batch of seeded history windows [batch, window, channels]
trtmc prepared, the forecasts [batch, horizon, channels] out (trtmc's runner rolls one window batch per
call)."""

from ort_ops import _media


def prepare(ctx):
    next_feeds = _media.rotation(ctx, "forecast", lambda c: _media.model_feeds(ctx, c, "forecast"))
    ctx.items = _media.batch(_media.model_feeds(ctx, ctx.require_calls("forecast")[0], "forecast"))
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        return ctx.session.run(None, next_feeds())

    return call, names
