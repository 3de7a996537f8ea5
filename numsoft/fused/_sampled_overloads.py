"""``@njit`` entry point of ``sampled_cross_entropy`` (SPEC §6, §10).

Inside a user's jitted function ``numsoft.sampled_cross_entropy`` resolves here and runs
the Python API's computation (``sampled.sampled_core_with``) with the serial row driver.
Supported there: ``h`` (N, D) and ``W`` (V, D) C-contiguous float32/float64 of one dtype,
``labels`` (N,) and ``sampled`` (S,) integer arrays, ``bias``, ``sampled_log_q`` and
``true_log_q`` 1-D arrays of ``h``'s dtype, ``reduction`` and ``return_grad`` as
compile-time constants; SciPy installed (the matrix products are Numba's ``np.dot``).
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload, register_jitable

from .._overloads import _check_array, _is_absent
from ..cpu._jit import read_only_array
from ..cpu.paths import specialize
from ._overloads import (
    _OUTPUTS,
    _check_hidden_and_weights,
    _check_int,
    _check_int_array,
    _count_valid,
    _fail,
    _grads,
    _grads_with_dbias,
    _hidden_shapes,
    _identity2,
    _loss_typing,
    _no_bias,
    _rows_like_labels,
    gradient_scale,
)
from .sampled import sampled_core_with, sampled_cross_entropy, sampled_rows


@register_jitable
def _check_ids(ids, vocab):
    for k in ids.flat:
        if k < 0 or k >= vocab:
            raise ValueError("sampled_cross_entropy: sampled ids must lie in [0, V)")


@overload(sampled_cross_entropy, prefer_literal=True)
def _sampled_cross_entropy_overload(
    h, W, labels, sampled, bias=None, sampled_log_q=None, true_log_q=None,
    remove_accidental_hits=True, ignore_index=-100, reduction="mean", return_grad=False,
):  # fmt: skip
    func = "sampled_cross_entropy"
    _check_hidden_and_weights(func, h, W)
    _check_int_array(func, "labels", labels, 1)
    _check_int_array(func, "sampled", sampled, 1)
    given = {}
    for name, value in (
        ("bias", bias),
        ("sampled_log_q", sampled_log_q),
        ("true_log_q", true_log_q),
    ):
        given[name] = not _is_absent(value)
        if given[name]:
            _check_array(func, name, value)
            if value.ndim != 1 or value.dtype != h.dtype:
                _fail(func, f"{name} must be a 1-D array of dtype {h.dtype}, got {value}")
    _check_int(func, "ignore_index", ignore_index)
    finish, _, want_grad, red = _loss_typing(
        func, reduction, False, return_grad, 0.0, 0.0, ignore_index, _rows_like_labels
    )
    output = _OUTPUTS[(False, want_grad)]
    bias_of = _identity2 if given["bias"] else _no_bias
    slq_of = _given_log_q if given["sampled_log_q"] else _zeros_like_ids
    tlq_of = _identity2 if given["true_log_q"] else _no_bias
    grads_of = _grads_with_dbias if given["bias"] else _grads
    core = sampled_core_with(
        specialize(sampled_rows, GRADIENT=want_grad, STREAM_OUTPUT=False).serial
    )

    def impl(h, W, labels, sampled, bias=None, sampled_log_q=None, true_log_q=None,
             remove_accidental_hits=True, ignore_index=-100, reduction="mean",
             return_grad=False):  # fmt: skip
        b = bias_of(bias, h.dtype)
        n, dim, vocab = _hidden_shapes(h, W, labels, b)
        slq = slq_of(sampled_log_q, sampled, h.dtype)
        tlq = tlq_of(true_log_q, h.dtype)
        if slq.size != sampled.size:
            raise ValueError("sampled_cross_entropy: sampled_log_q must have one entry per id")
        if tlq.size != 0 and tlq.size != n:
            raise ValueError("sampled_cross_entropy: true_log_q must have one entry per row")
        lab = read_only_array(labels.astype(np.int64))
        ids = read_only_array(sampled.astype(np.int64))
        _check_ids(ids, vocab)
        n_valid = _count_valid(lab, vocab, ignore_index)
        rows, cols = (n, dim) if want_grad else (0, 0)
        out = (
            np.empty(n, dtype=h.dtype),
            np.empty((rows, cols), dtype=h.dtype),
            np.zeros((vocab if want_grad else 0, cols), dtype=h.dtype),
            np.zeros(b.size if want_grad else 0, dtype=h.dtype),
        )
        params = (gradient_scale(red, n_valid), 1.0 if remove_accidental_hits else 0.0,
                  float(ignore_index))  # fmt: skip
        core(
            read_only_array(h), read_only_array(W), read_only_array(b), lab, ids,
            read_only_array(slq), read_only_array(tlq), params, want_grad, out,
        )  # fmt: skip
        loss = out[0]
        return output(finish(loss, labels, n_valid), loss, grads_of(out[1], out[2], out[3]))

    return impl


@register_jitable
def _zeros_like_ids(log_q, ids, dtype):
    return np.zeros(ids.size, dtype=dtype)


@register_jitable
def _given_log_q(log_q, ids, dtype):
    return log_q
