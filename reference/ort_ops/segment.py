"""`segment`: the forward pass on the prepared image batch, then the label map (arg-max class of every
pixel) and the pixel count of every class, as trtmc's runner does inside its call."""

import numpy as np

import trtmc_reference as ref
from ort_ops import _media


def prepare(ctx):
    next_feeds = _media.rotation(ctx, "segment", lambda c: _media.model_feeds(ctx, c, "segment"))
    ctx.items = _media.batch(_media.model_feeds(ctx, ctx.require_calls("segment")[0], "segment"))
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        outputs = ctx.session.run(None, next_feeds())
        logits = outputs[0]
        if logits.ndim != 4:
            raise ref.ReferenceFailure(
                f"mask logits must be [batch, classes, height, width], got {list(logits.shape)}")
        labels = np.argmax(logits, axis=1)
        ctx.notes["pixels_per_class"] = np.bincount(labels.ravel(), minlength=logits.shape[1]).tolist()
        return outputs

    return call, names
