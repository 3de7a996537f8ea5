"""Training the softmax-regression classifier with the fused numsoft.cross_entropy.

The same model and data as ``softmax_regression.py`` (whose helpers this script
imports), but the loss and its gradient with respect to the logits come from one call,
``numsoft.cross_entropy(logits, labels, label_smoothing=..., return_grad=True)``: the
logsumexp, the gather of the label's logit and the gradient are computed in one visit
of each row, and the probabilities are never stored. The script first checks the fused
loss and gradient against ``log_softmax``/``log_softmax_backward``, then trains with
label smoothing and prints train/test accuracy.

    python examples/cross_entropy_training.py
    python examples/cross_entropy_training.py --small    # for CI

Needs ``cross_entropy``; exits with status 77 (skipped) and a message when this numsoft
does not have it yet.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

import numpy as np
from softmax_regression import accuracy, digits, split, synthetic

import numsoft

SKIPPED = 77


def find(name: str):
    """``numsoft.<name>``, or the same name from a subpackage that is not re-exported yet."""
    func = getattr(numsoft, name, None)
    for sub in ("variants", "fused"):
        if func is not None:
            break
        with contextlib.suppress(ImportError):
            func = getattr(importlib.import_module(f"numsoft.{sub}"), name, None)
    return func


def unfused_loss_and_grad(logits, labels, eps):
    """Label-smoothed mean cross-entropy and its gradient, from the core functions."""
    n, n_classes = logits.shape
    target = np.full((n, n_classes), eps / n_classes)
    target[np.arange(n), labels] += 1.0 - eps
    log_p = numsoft.log_softmax(logits)
    loss = -(target * log_p).sum() / n
    return loss, numsoft.log_softmax_backward(log_p, -target / n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a CI-sized run")
    parser.add_argument("--dataset", choices=["synthetic", "digits"], default="synthetic")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cross_entropy = find("cross_entropy")
    if cross_entropy is None:
        print("skipped: this numsoft has no cross_entropy (numsoft.fused not merged yet)")
        return SKIPPED

    rng = np.random.default_rng(args.seed)
    if args.dataset == "digits":
        try:
            x, y, n_classes = digits()
        except ImportError:
            print("--dataset digits needs scikit-learn (pip install scikit-learn)")
            return 2
    else:
        x, y, n_classes = synthetic(1500 if args.small else 20_000, rng)
    steps = 100 if args.small else args.steps
    eps = args.label_smoothing
    x_train, y_train, x_test, y_test = split(x, y, rng)
    mu, sd = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8
    x_train, x_test = (x_train - mu) / sd, (x_test - mu) / sd

    # The fused loss and gradient against the unfused computation, at random weights.
    logits = x_train @ rng.normal(scale=0.1, size=(x.shape[1], n_classes))
    loss, grad = cross_entropy(logits, y_train, label_smoothing=eps, return_grad=True)
    ref_loss, ref_grad = unfused_loss_and_grad(logits, y_train, eps)
    loss_err = abs(float(loss) - float(ref_loss))
    grad_err = float(np.max(np.abs(grad - ref_grad)))
    print(
        f"fused vs log_softmax + log_softmax_backward: |loss difference| = {loss_err:.1e}, "
        f"max |gradient difference| = {grad_err:.1e}"
    )

    w = np.zeros((x.shape[1], n_classes))
    b = np.zeros(n_classes)
    print(
        f"{args.dataset}: {len(y_train)} train / {len(y_test)} test samples, "
        f"{n_classes} classes, label smoothing {eps}, {steps} steps"
    )
    print(f"{'step':>5}  {'train loss':>10}  {'train acc':>9}  {'test acc':>8}")
    for step in range(steps + 1):
        loss, dlogits = cross_entropy(
            x_train @ w + b, y_train, label_smoothing=eps, return_grad=True
        )
        if step % max(1, steps // 10) == 0:
            print(
                f"{step:5d}  {float(loss):10.4f}  {accuracy(w, b, x_train, y_train):9.3f}  "
                f"{accuracy(w, b, x_test, y_test):8.3f}"
            )
        w -= args.lr * (x_train.T @ dlogits)
        b -= args.lr * dlogits.sum(axis=0)

    test_acc = accuracy(w, b, x_test, y_test)
    print(
        f"final: train accuracy {accuracy(w, b, x_train, y_train):.3f}, "
        f"test accuracy {test_acc:.3f} (chance {1 / n_classes:.3f})"
    )
    if loss_err > 1e-12 or grad_err > 1e-12:
        print("FAIL: the fused cross_entropy disagrees with log_softmax + backward")
        return 1
    if test_acc < 3 / n_classes:
        print("FAIL: the classifier is not clearly better than chance")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
