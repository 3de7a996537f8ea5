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
        args = arguments(loss, (64, 2000) if SMOKE else SHAPES[loss])
        self.run = lambda: step(*args)
        self.run()


class TimeLossStep(_Loss):
    """Loss and gradient, float32, all threads (``loss_peers.SHAPES``)."""

    def time_loss_and_gradient(self, library, loss):
        self.run()


class TrackLossMemory(_Loss):
    """Peak memory one step adds (MiB); a (4096, 32000) gradient alone is 500 MiB."""

    def setup(self, library, loss):
        check_peak_tracking()
        super().setup(library, loss)

    def track_extra_peak_mib(self, library, loss):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"
