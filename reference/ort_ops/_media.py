"""Shared pieces of the media operations' references (vision, forecast, audio, diffusion)."""

import trtmc_reference as ref


def single_call(ctx, operation):
    """The one call's saved inputs: these runners repeat the same prepared inputs every call."""
    calls = ctx.require_calls(operation)
    if len(calls) != 1:
        raise ref.ReferenceFailure(
            f"operation {operation!r} repeats one prepared call, the saved inputs hold {len(calls)}")
    return calls[0]


def rotation(ctx, operation, each):
    """`each(call_inputs)` prepared for every saved call, served in call order: call i gets entry i % n,
    as trtmc's runner rotates its declared inputs (one entry when the calls repeat one input)."""
    return cycle([each(c) for c in ctx.require_calls(operation)])


def cycle(prepared):
    """Serves `prepared` in order, from the start again after the last entry."""
    position = [0]

    def next_entry():
        i = position[0]
        position[0] = (i + 1) % len(prepared)
        return prepared[i]

    return next_entry


def batch(feeds):
    """The batch size of a call's feeds: the first dimension of its first tensor (1 for a scalar)."""
    first = next(iter(feeds.values()), None)
    return int(first.shape[0]) if first is not None and first.ndim else 1


def tensor(call, name, operation):
    """Saved tensor `name`, or a failure naming it."""
    return _saved(call, "tensors", "tensor", name, operation)


def value(call, name, operation):
    """Saved value `name`, or a failure naming it."""
    return _saved(call, "values", "value", name, operation)


def _saved(call, section, kind, name, operation):
    """Entry `name` of the call's `section` (tensors or values), or a failure naming what was saved."""
    if name not in call[section]:
        raise ref.ReferenceFailure(
            f"operation {operation!r} needs the saved {kind} {name!r} (saved: "
            f"{', '.join(call[section]) or 'none'})")
    return call[section][name]


def model_feeds(ctx, call, operation):
    """The saved tensors that feed the model: every declared input must be among them."""
    declared = [i.name for i in ctx.session.get_inputs()]
    missing = [n for n in declared if n not in call["tensors"]]
    if missing:
        raise ref.ReferenceFailure(
            f"operation {operation!r}: the model's input(s) {', '.join(missing)} are not among the saved "
            f"tensors ({', '.join(call['tensors']) or 'none'})")
    return {n: call["tensors"][n] for n in declared}

