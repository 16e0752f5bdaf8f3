"""`classify`: the forward pass and the top-1 class of each image, as trtmc's runner does."""

import numpy as np

from ort_ops import _media


def prepare(ctx):
    names = [o.name for o in ctx.session.get_outputs()]
    # The runner's image batch of each distinct call (declared images rotate across calls); a request
    # saved without per-call inputs feeds the synthesized inputs.
    if ctx.calls:
        next_feeds = _media.rotation(ctx, "classify", lambda c: _media.model_feeds(ctx, c, "classify"))
        ctx.items = _media.batch(_media.model_feeds(ctx, ctx.calls[0], "classify"))
    else:
        def next_feeds():
            return ctx.feeds
        ctx.items = _media.batch(ctx.feeds)

    def call():
        outputs = ctx.session.run(None, next_feeds())
        np.argmax(outputs[0].reshape(outputs[0].shape[0], -1), axis=1)
        return outputs

    return call, names
