"""Losses between two distributions (SPEC §10), forward and backward, float32, beside
torch's composed CPU operators: time and the peak memory a step adds.

The fused forms allocate the gradient and nothing else of the input's size; torch's
composition keeps its log-softmaxes (and, for the JSD, the mixture) for autograd.
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
from .divergence_peers import LOSSES, inputs, numsoft_step, torch_step

#: (N, V): a batch of 4096 tokens over a 32 000-word vocabulary (512 MB per array).
SHAPE = "64x2000" if SMOKE else "4096x32000"


class _Divergence:
    timeout = 600
    params = (("numsoft", "torch"), LOSSES)
    param_names = ["library", "loss"]

    def setup(self, library, loss):
        threads = max(available_threads())
        set_threads(threads)
        if library == "torch":
            optional_module("torch").set_num_threads(threads)
        step = numsoft_step(loss) if library == "numsoft" else torch_step(loss)
        student = make_logits(SHAPE, "float32", seed=1)
        second = inputs(loss, student, make_logits(SHAPE, "float32", seed=2))
        self.run = lambda: step(student, second)
        self.run()


class TimeDivergenceStep(_Divergence):
    """Loss and the student's gradient, (4096, 32000) float32, all threads."""

    def time_loss_and_gradient(self, library, loss):
        self.run()


class TrackDivergenceMemory(_Divergence):
    """Peak memory one step adds (MiB); the gradient alone is 500 MiB."""

    def setup(self, library, loss):
        check_peak_tracking()
        super().setup(library, loss)

    def track_extra_peak_mib(self, library, loss):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"
