"""Softmax variants (SPEC §4), each beside ``softmax`` itself on one graph.

A variant is looked up on ``numsoft.variants``, then on ``numsoft``; one that does not
exist at the benchmarked commit is skipped. Arguments follow SPEC §4; the call is the
allocating form, float32, last axis, 2 threads. Adding a variant is one entry in
``VARIANTS``.
"""

from __future__ import annotations

import functools

from .common import (
    SHAPES,
    available_threads,
    make_logits,
    numsoft_function,
    set_threads,
)

#: name → keyword arguments beyond ``x`` (SPEC §4 signatures).
VARIANTS = {
    "softmax": {},  # the baseline the variants are read against
    "adaptive_softmax": {},
    "ssmax": {"s": 1.0},
    "sparsemax": {},
    "entmax15": {},
    "entmax": {"alpha": 1.5, "n_iter": 50},
    "stablemax": {},
    "log_stablemax": {},
    "softpick": {"eps": 1e-6},
    "sa_softmax": {"normalized": False},
    "multimax": {"ranges": (-2.0, 2.0, -4.0, 4.0), "ts": (0.5, 0.5, 0.1, 0.1)},
    "sigmoid_attention": {},
    "softplus_l1": {},
    "gumbel_softmax": {"tau": 1.0, "seed": 0},
    "topk_softmax": {"k": 8},
    "rowmax_pot": {},
}


class TimeVariants:
    """``variant(x, axis=-1, **kwargs)`` on float32 logits."""

    timeout = 300
    params = (tuple(VARIANTS), SHAPES)
    param_names = ["function", "shape"]

    def setup(self, function, shape):
        func = numsoft_function(function, module="variants")
        set_threads(max(available_threads()))
        x = make_logits(shape, "float32")
        self.run = functools.partial(func, x, axis=-1, **VARIANTS[function])
        self.run()

    def time_variant(self, function, shape):
        self.run()
