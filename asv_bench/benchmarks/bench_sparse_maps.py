"""The sparse maps at every support size, forward + backward through torch autograd:
``numsoft.torch`` (the entmax drop-in) beside the ``entmax`` package on one graph.

Logits are ``randn * scale``: at scale 3 a row's support is a handful of entries, at
0.1 (attention scores early in training) almost every entry is in it, which is where a
sort-based threshold costs most. float32, 2 threads, the normalized axis last; the
``library`` parameter puts numsoft and entmax side by side. Without torch or entmax the
benchmarks are skipped. ``asv_bench/autograd_speed.py --scales`` prints the same cases
as a table of ratios from one process.
"""

from __future__ import annotations

from .common import SMOKE, available_threads, optional_module, set_threads

FUNCTIONS = ("sparsemax", "entmax15", "entmax_bisect", "sparsemax_bisect")
SHAPES = ("64x100", "4x4097", "2x2x16x16") if SMOKE else ("4096x1000", "256x50257", "16x8x128x128")
SCALES = ("3", "1", "0.3", "0.1")


class TimeSparseMapsAutograd:
    """``y = f(x, dim=-1)``, ``y.backward(w)`` with ``x`` requiring grad."""

    timeout = 600
    number = 1
    repeat = (2, 4, 10.0)
    params = (("numsoft", "entmax"), FUNCTIONS, SHAPES, SCALES)
    param_names = ["library", "function", "shape", "scale"]

    def setup(self, library, function, shape, scale):
        torch = optional_module("torch")
        module = optional_module("numsoft.torch" if library == "numsoft" else "entmax")
        threads = max(available_threads())
        set_threads(threads)
        torch.set_num_threads(threads)
        dims = tuple(int(d) for d in shape.split("x"))
        gen = torch.Generator().manual_seed(0)
        self.x = (torch.randn(dims, generator=gen) * float(scale)).requires_grad_()
        self.w = torch.randn(dims, generator=gen)
        self.func = getattr(module, function)
        self.time_forward_backward(library, function, shape, scale)  # compiles, first-touches

    def time_forward_backward(self, library, function, shape, scale):
        self.x.grad = None
        self.func(self.x, dim=-1).backward(self.w)
