"""`detect`: the forward pass on the prepared image batch, then the same post-processing as trtmc's
runner: over [batch, boxes, 4 + classes], a box is a detection when its best class score passes
`score_threshold` (compared in float32)."""

import numpy as np

import trtmc_reference as ref
from ort_ops import _media


def prepare(ctx):
    next_feeds = _media.rotation(ctx, "detect", lambda c: _media.model_feeds(ctx, c, "detect"))
    ctx.items = _media.batch(_media.model_feeds(ctx, ctx.require_calls("detect")[0], "detect"))
    threshold = np.float32(_media.value(ctx.require_calls("detect")[0], "score_threshold", "detect"))
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        outputs = ctx.session.run(None, next_feeds())
        per_box = outputs[0].shape[-1] if outputs[0].ndim else 0
        if per_box <= 4:
            raise ref.ReferenceFailure("detections must hold 4 box coordinates plus class scores per box")
        boxes = outputs[0].reshape(-1, per_box)
        ctx.notes["detections"] = int((boxes[:, 4:] > threshold).any(axis=1).sum())
        return outputs

    return call, names
