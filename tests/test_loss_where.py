"""``where=`` on the losses with a class axis (SPEC §1, §10): ``cross_entropy`` with
labels or probability targets and ``margin_cross_entropy``.

A class where ``where`` is False is not in the row's distribution. The oracle drops
those classes from each row and runs SciPy's ``log_softmax`` in float64 on what is
left, with label smoothing spread over the classes kept; torch agrees where it can say
the same thing (masked logits at -inf, no smoothing). Tolerances: float64 1e-12,
float32 1e-5 relative.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy.special import log_softmax

import numsoft

RNG = np.random.default_rng(11)


def _case(rows=6, classes=9, dtype=np.float64):
    x = RNG.standard_normal((rows, classes)).astype(dtype)
    keep = RNG.random((rows, classes)) > 0.4
    labels = RNG.integers(0, classes, rows)
    keep[np.arange(rows), labels] = True
    return x, keep, labels


def _oracle_labels(x, keep, labels, eps):
    out = []
    for xi, ki, y in zip(x.astype(np.float64), keep, labels):
        lp = log_softmax(xi[ki])
        at = np.flatnonzero(np.flatnonzero(ki) == y)[0]
        out.append(-(1 - eps) * lp[at] - eps / ki.sum() * lp.sum())
    return np.array(out)


def _oracle_targets(x, q, keep, eps):
    out = []
    for xi, qi, ki in zip(x.astype(np.float64), q.astype(np.float64), keep):
        target = (1 - eps) * qi[ki] + eps / ki.sum()
        out.append(-(target * log_softmax(xi[ki])).sum())
    return np.array(out)


def _oracle_margin(c, keep, labels, m1, m2, m3, s):
    out = []
    for ci, ki, y in zip(c.astype(np.float64), keep, labels):
        z = s * ci
        z[y] = s * (np.cos(m1 * np.arccos(np.clip(ci[y], -1, 1)) + m2) - m3)
        out.append(-log_softmax(np.where(ki, z, -np.inf))[y])
    return np.array(out)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_labels_leave_the_masked_classes_out(dtype, tol, eps):
    x, keep, labels = _case(dtype=dtype)
    got = numsoft.cross_entropy(x, labels, where=keep, label_smoothing=eps, reduction="none")
    np.testing.assert_allclose(got, _oracle_labels(x, keep, labels, eps), rtol=tol, atol=tol)
    # the class axis elsewhere, and the mask broadcast over rows
    got0 = numsoft.cross_entropy(
        np.ascontiguousarray(x.T), labels, axis=0, where=keep.T, label_smoothing=eps,
        reduction="none",
    )  # fmt: skip
    np.testing.assert_allclose(got0, got, rtol=tol, atol=tol)
    row = keep[0] | np.eye(x.shape[1], dtype=bool)[labels].any(0)
    shared = numsoft.cross_entropy(x, labels, where=row, label_smoothing=eps, reduction="none")
    want = _oracle_labels(x, np.broadcast_to(row, x.shape), labels, eps)
    np.testing.assert_allclose(shared, want, rtol=tol, atol=tol)


def test_the_gradient_and_lse_of_labels_with_where():
    x, keep, labels = _case()
    labels[1] = -100
    loss, lse, grad = numsoft.cross_entropy(
        x, labels, where=keep, label_smoothing=0.2, z_loss=0.01, return_lse=True,
        return_grad=True,
    )  # fmt: skip
    want_lse = [np.logaddexp.reduce(xi[ki]) for xi, ki in zip(x, keep)]
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)
    assert (grad[~keep] == 0).all() and (grad[1] == 0).all()

    def f(v):
        return numsoft.cross_entropy(v, labels, where=keep, label_smoothing=0.2, z_loss=0.01)

    h = 1e-6
    for idx in [(0, 0), (2, labels[2]), (3, 5), (5, 8)]:
        e = np.zeros_like(x)
        e[idx] = h
        np.testing.assert_allclose(grad[idx], (f(x + e) - f(x - e)) / (2 * h), atol=1e-8)


def test_everything_kept_equals_no_where_and_torch_agrees():
    torch = pytest.importorskip("torch")
    x, keep, labels = _case()
    plain = numsoft.cross_entropy(x, labels, label_smoothing=0.1, reduction="none")
    every = numsoft.cross_entropy(
        x, labels, where=np.ones_like(keep), label_smoothing=0.1, reduction="none"
    )
    np.testing.assert_allclose(every, plain, rtol=1e-13)
    masked = torch.tensor(np.where(keep, x, -np.inf))
    want = torch.nn.functional.cross_entropy(masked, torch.tensor(labels), reduction="none")
    got = numsoft.cross_entropy(x, labels, where=keep, reduction="none")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.25])
def test_probability_targets_are_read_on_the_kept_classes_only(eps):
    x, keep, _ = _case()
    q = RNG.random(x.shape)
    q /= q.sum(-1, keepdims=True)
    got, grad = numsoft.cross_entropy(
        x, q, where=keep, label_smoothing=eps, reduction="none", return_grad=True
    )
    np.testing.assert_allclose(got, _oracle_targets(x, q, keep, eps), rtol=1e-12)
    assert (grad[~keep] == 0).all()
    other = np.where(keep, q, 7.0)  # what the masked classes hold is not read
    np.testing.assert_array_equal(
        numsoft.cross_entropy(x, other, where=keep, label_smoothing=eps, reduction="none"), got
    )


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_margin_leaves_the_masked_classes_out(dtype, tol):
    x, keep, labels = _case(dtype=dtype)
    c = np.tanh(x)
    c[~keep] = 5.0  # not a cosine, but not read
    got, grad = numsoft.margin_cross_entropy(
        c, labels, where=keep, scale=16.0, reduction="none", return_grad=True
    )
    want = _oracle_margin(c, keep, labels, 1.0, 0.5, 0.0, 16.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert (grad[~keep] == 0).all()


@pytest.mark.parametrize(
    "call",
    [
        lambda x, lab, keep: numsoft.cross_entropy(x, lab, where=keep),
        lambda x, lab, keep: numsoft.margin_cross_entropy(np.tanh(x), lab, where=keep),
    ],
    ids=["cross_entropy", "margin_cross_entropy"],
)
def test_a_label_on_a_class_left_out_is_an_error(call):
    x, keep, labels = _case()
    keep[2, labels[2]] = False
    with pytest.raises(ValueError, match="labels: a label names a class that where= leaves"):
        call(x, labels, keep)
    labels[2] = -100  # an ignored row may point anywhere
    assert np.isfinite(call(x, labels, keep))
    with pytest.raises(TypeError, match="where must be a boolean array"):
        call(x, labels, keep.astype(int))
    with pytest.raises(ValueError, match="where of shape"):
        call(x, labels, keep[:, :3])


def test_the_inputs_are_not_modified():
    x, keep, labels = _case()
    q = RNG.random(x.shape)
    copies = [a.copy() for a in (x, keep, labels, q)]
    numsoft.cross_entropy(x, labels, where=keep, label_smoothing=0.1, return_grad=True)
    numsoft.cross_entropy(x, q, where=keep, label_smoothing=0.1, return_grad=True)
    numsoft.margin_cross_entropy(np.tanh(x), labels, where=keep, return_grad=True)
    for a, b in zip((x, keep, labels, q), copies):
        np.testing.assert_array_equal(a, b)


@numba.njit
def _njit_labels(x, lab, keep):
    return numsoft.cross_entropy(
        x, lab, where=keep, label_smoothing=0.1, reduction="none", return_lse=True,
        return_grad=True,
    )  # fmt: skip


@numba.njit
def _njit_targets(x, q, keep):
    return numsoft.cross_entropy(x, q, where=keep, label_smoothing=0.1, return_grad=True)


@numba.njit
def _njit_margin(c, lab, keep):
    return numsoft.margin_cross_entropy(c, lab, where=keep, scale=8.0, return_grad=True)


def test_inside_njit_the_results_equal_the_python_api():
    x, keep, labels = _case()
    q = RNG.random(x.shape)
    pairs = [
        (
            _njit_labels(x, labels, keep),
            numsoft.cross_entropy(
                x,
                labels,
                where=keep,
                label_smoothing=0.1,
                reduction="none",
                return_lse=True,
                return_grad=True,
            ),  # fmt: skip
        ),
        (
            _njit_targets(x, q, keep),
            numsoft.cross_entropy(x, q, where=keep, label_smoothing=0.1, return_grad=True),
        ),
        (
            _njit_margin(np.tanh(x), labels, keep),
            numsoft.margin_cross_entropy(
                np.tanh(x), labels, where=keep, scale=8.0, return_grad=True
            ),
        ),
    ]
    for got, want in pairs:
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    bad = labels.copy()
    bad[0] = np.flatnonzero(~keep[0])[0]
    with pytest.raises(ValueError, match="where= leaves"):
        _njit_labels(x, bad, keep)
    with pytest.raises(ValueError, match="shape"):
        _njit_margin(np.tanh(x), labels, np.ones((6, 3), bool))
