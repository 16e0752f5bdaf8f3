"""`generate_image`: the diffusion loop of trtmc's runner around the noise predictor. From the initial
noise trtmc saved (`noise`, its seeded synthesis), `steps` Euler steps in float32: dt = 1 / steps,
t = 1 - k * dt, x -= dt * eps(sample=x, timestep=[t]).

The call returns the denoised latents as floats: the timed loop checks them for NaN and infinity before
anything could convert them to 8-bit pixels (where a clamp would hide them), so non-finite latents are a
reference failure naming `denoised_latents`, never a result."""

import os

import numpy as np

import trtmc_reference as ref
from ort_ops import _media


def prepare(ctx, operation="generate_image"):
    calls = ctx.require_calls(operation)
    steps = int(_media.value(calls[0], "steps", operation))
    if steps < 1:
        raise ref.ReferenceFailure(f"steps must be at least 1, got {steps}")
    declared = sorted(i.name for i in ctx.session.get_inputs())
    if declared != ["sample", "timestep"]:
        raise ref.ReferenceFailure(
            f"the denoiser must take exactly `sample` and `timestep`; it declares {', '.join(declared)}")
    scale = ctx.options.get("test_noise_scale")
    if scale is not None and os.environ.get("TRTMC_TEST") != "1":
        raise ref.ReferenceFailure("option test_noise_scale is a test hook: it is honoured only with TRTMC_TEST=1")

    def initial_noise(call_inputs):
        noise = _media.tensor(call_inputs, "noise", operation)
        if noise.dtype != np.float32:
            raise ref.ReferenceFailure(f"the saved noise must be float32, got {noise.dtype}")
        if scale is not None:
            # Test-only: a scale beyond float32 turns the noise into infinities (NaN where it is 0).
            with np.errstate(over="ignore", invalid="ignore"):
                noise = noise * np.float32(float(scale))
        return noise

    # Each distinct call's noise (per-sample seeds), in the runner's call order.
    next_noise = _media.rotation(ctx, operation, initial_noise)
    dt = np.float32(1.0) / np.float32(steps)
    timesteps = [np.array([np.float32(1.0) - np.float32(k) * dt], dtype=np.float32) for k in range(steps)]
    ctx.notes["steps"] = steps
    # Images per call as trtmc counts them (the noise batch); a video is one item of many frames.
    if operation == "generate_image":
        ctx.items = _media.batch({"noise": _media.tensor(calls[0], "noise", operation)})

    def call():
        x = next_noise().copy()
        for t in timesteps:
            eps = ctx.session.run(None, {"sample": x, "timestep": t})[0]
            if eps.shape != x.shape:
                raise ref.ReferenceFailure(
                    f"the denoiser returned shape {list(eps.shape)} for a sample of {list(x.shape)}")
            x += -dt * eps
        return [x]

    return call, ["denoised_latents"]


def notes(ctx, outputs):
    """trtmc's `latent_mean` of the last call's latents, computed after the timed loop."""
    ctx.notes["latent_mean"] = float(np.mean(outputs[0], dtype=np.float64))
