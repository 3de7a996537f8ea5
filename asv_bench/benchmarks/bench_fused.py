"""Fused operations (SPEC §5) beside the unfused NumPy composition (and torch).

A function is looked up on ``numsoft.fused``, then on ``numsoft``; one that does not
exist at the benchmarked commit is skipped, and so is torch when it is not installed.
The ``extra_peak_mib`` tracks show what fusion is for: the NumPy composition
materializes the (N, V) logits or the (L, L) scores, the fused form should not.
"""

from __future__ import annotations

import functools

import numpy as np

from .common import (
    IN_CACHE,
    OUT_OF_CACHE,
    available_threads,
    check_peak_tracking,
    extra_peak_mib,
    make_logits,
    numsoft_function,
    optional_module,
    parse_shape,
    set_threads,
)

LIBRARIES = ("numsoft", "numpy", "torch")
#: linear_cross_entropy problem: N tokens, hidden size D, vocabulary V (logits 64 MiB).
LCE_N, LCE_D, LCE_V = 2048, 256, 8192
#: attention problem: sequence length L, head dimension d (scores 16 MiB as float32).
ATT_L, ATT_D = 2048, 64


def _threads() -> int:
    n = max(available_threads())
    set_threads(n)
    return n


def _labels(n_rows: int, n_classes: int) -> np.ndarray:
    return np.random.default_rng(2).integers(0, n_classes, size=n_rows)


def _numpy_lse(logits: np.ndarray) -> np.ndarray:
    m = logits.max(axis=-1, keepdims=True)
    return m[:, 0] + np.log(np.exp(logits - m).sum(axis=-1))


def numpy_cross_entropy(logits, labels):
    """Mean of ``logsumexp(logits) - logits[label]``, unfused."""
    picked = np.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return np.mean(_numpy_lse(logits) - picked)


def numpy_linear_cross_entropy(h, W, labels):
    """Materializes the (N, V) logits ``h @ W.T``."""
    return numpy_cross_entropy(h @ W.T, labels)


@functools.lru_cache(maxsize=2)
def _future_mask(n: int) -> np.ndarray:
    """True above the diagonal: the keys a causal query may not see (built once)."""
    return np.triu(np.ones((n, n), dtype=bool), 1)


def numpy_attention(q, k, v, causal):
    """Materializes the (L, L) scores."""
    s = (q @ k.T) * q.dtype.type(1.0 / np.sqrt(q.shape[-1]))
    if causal:
        np.putmask(s, _future_mask(s.shape[0]), -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v


def _torch_fn(name: str):
    torch = optional_module("torch")
    torch.set_num_threads(_threads())
    functional = torch.nn.functional
    if name == "cross_entropy":
        return lambda x, y: functional.cross_entropy(torch.from_numpy(x), torch.from_numpy(y))
    if name == "linear_cross_entropy":
        return lambda h, W, y: functional.cross_entropy(
            torch.from_numpy(h) @ torch.from_numpy(W).T, torch.from_numpy(y)
        )
    return lambda q, k, v, causal: functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=causal
    )


def fused_implementation(library: str, name: str):
    """The callable for ``name`` in ``library`` (SPEC §5 argument order)."""
    if library == "numsoft":
        _threads()
        func = numsoft_function(name, module="fused")
        if name == "attention":
            return lambda q, k, v, causal: func(q, k, v, causal=causal)
        return func
    if library == "numpy":
        return {
            "cross_entropy": numpy_cross_entropy,
            "linear_cross_entropy": numpy_linear_cross_entropy,
            "attention": numpy_attention,
        }[name]
    return _torch_fn(name)


class TimeSoftmaxTopk:
    """``softmax_topk(x, k)`` (one read of x) against ``softmax`` then ``argpartition``."""

    timeout = 300
    params = (("numsoft", "softmax+argpartition"), (IN_CACHE, OUT_OF_CACHE), (8,))
    param_names = ["library", "shape", "k"]

    def setup(self, library, shape, k):
        x = make_logits(shape, "float32")
        if library == "numsoft":
            _threads()
            self.run = functools.partial(numsoft_function("softmax_topk", "fused"), x, k)
        else:
            softmax = numsoft_function("softmax")
            self.run = functools.partial(np.argpartition, softmax(x), -k, axis=-1)
        self.run()

    def time_softmax_topk(self, library, shape, k):
        self.run()


class TimeCrossEntropy:
    """``cross_entropy(logits, labels)``, mean reduction."""

    timeout = 300
    params = (LIBRARIES, (IN_CACHE, OUT_OF_CACHE))
    param_names = ["library", "shape"]

    def setup(self, library, shape):
        func = fused_implementation(library, "cross_entropy")
        logits = make_logits(shape, "float32")
        labels = _labels(*parse_shape(shape))
        self.run = functools.partial(func, logits, labels)
        self.run()

    def time_cross_entropy(self, library, shape):
        self.run()


class _LinearCrossEntropy:
    timeout = 300
    params = (LIBRARIES,)
    param_names = ["library"]

    def setup(self, library):
        func = fused_implementation(library, "linear_cross_entropy")
        rng = np.random.default_rng(3)
        h = rng.standard_normal((LCE_N, LCE_D), dtype=np.float32)
        W = rng.standard_normal((LCE_V, LCE_D), dtype=np.float32) * np.float32(0.05)
        self.run = functools.partial(func, h, W, _labels(LCE_N, LCE_V))
        self.run()


class TimeLinearCrossEntropy(_LinearCrossEntropy):
    """Cross-entropy of ``h @ W.T`` (N=2048, D=256, V=8192)."""

    def time_linear_cross_entropy(self, library):
        self.run()


class TrackLinearCrossEntropyMemory(_LinearCrossEntropy):
    """Extra peak memory of one call (MiB): 64 MiB of logits unfused, O(N·chunk) fused."""

    def setup(self, library):
        check_peak_tracking()
        super().setup(library)

    def track_extra_peak_mib(self, library):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"


class _Attention:
    timeout = 300
    params = (LIBRARIES, (False, True))
    param_names = ["library", "causal"]

    def setup(self, library, causal):
        func = fused_implementation(library, "attention")
        rng = np.random.default_rng(4)
        q, k, v = (rng.standard_normal((ATT_L, ATT_D), dtype=np.float32) for _ in range(3))
        if library == "numpy" and causal:
            _future_mask(ATT_L)  # the mask is an input, not part of the timed work
        self.run = functools.partial(func, q, k, v, causal)
        self.run()


class TimeAttention(_Attention):
    """``attention(q, k, v, causal=)`` with (L, d) = (2048, 64) float32."""

    def time_attention(self, library, causal):
        self.run()


class TrackAttentionMemory(_Attention):
    """Extra peak memory of one call (MiB): the 16 MiB score matrix unfused."""

    params = (LIBRARIES, (False,))

    def setup(self, library, causal):
        check_peak_tracking()
        super().setup(library, causal)

    def track_extra_peak_mib(self, library, causal):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"
