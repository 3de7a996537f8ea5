"""The losses of SPEC §10, forward and backward, float32, beside torch's composed CPU
operators: time and the peak memory a step adds.

The fused forms allocate the gradient and nothing else of the input's size; torch's
composition keeps its intermediates (log-softmaxes, the JSD's mixture, the margin's
scaled logits) for autograd.
"""

from __future__ import annotations

from .common import (
    SMOKE,
    available_threads,
    check_peak_tracking,
    extra_peak_mib,
    make_logits,
    optional_module,
    set_threads,
)
from .loss_peers import LOSSES, SHAPES, arguments, numsoft_step, torch_step


class _Loss:
    timeout = 600
    params = (("numsoft", "torch"), LOSSES)
    param_names = ["library", "loss"]

    def setup(self, library, loss):
        threads = max(available_threads())
        set_threads(threads)
        if library == "torch":
            optional_module("torch").set_num_threads(threads)
        step = numsoft_step(loss) if library == "numsoft" else torch_step(loss)
        n, c = (64, 2000) if SMOKE else SHAPES[loss]
        shape = f"{n}x{c}"
        args = arguments(loss, make_logits(shape, "float32", 1), make_logits(shape, "float32", 2))
        self.run = lambda: step(*args)
        self.run()


class TimeLossStep(_Loss):
    """Loss and gradient: (4096, 32000) float32 (the margin: (4096, 10000)), all threads."""

    def time_loss_and_gradient(self, library, loss):
        self.run()


class TrackLossMemory(_Loss):
    """Peak memory one step adds (MiB); the gradient alone is 500 MiB (margin: 156 MiB)."""

    def setup(self, library, loss):
        check_peak_tracking()
        super().setup(library, loss)

    def track_extra_peak_mib(self, library, loss):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"
