"""A softmax-regression classifier trained by gradient descent with numsoft.

The model is ``logits = X @ W + b``; the loss is the mean negative log-likelihood
``-mean(log_softmax(logits)[i, y_i])``. The forward pass is ``numsoft.log_softmax`` and
the backward pass ``numsoft.log_softmax_backward``: with the upstream gradient
``dL/dlog_p = -onehot(y)/N``, it returns ``dL/dlogits``, and the chain rule gives the
gradients of W and b. (The script checks that gradient against the closed form
``(softmax(logits) - onehot(y))/N`` once.)

Data: by default a synthetic problem generated here (10 classes in 32 dimensions, with
overlapping classes so it is not trivially separable); ``--dataset digits`` uses
scikit-learn's 8×8 handwritten digits when scikit-learn is installed.

    python examples/softmax_regression.py
    python examples/softmax_regression.py --small     # fewer samples and steps, for CI
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import numsoft


def synthetic(n: int, rng: np.random.Generator, n_classes: int = 10, dim: int = 32):
    """Gaussian classes around random centres; noise large enough that classes overlap."""
    centres = rng.normal(size=(n_classes, dim))
    y = rng.integers(n_classes, size=n)
    x = centres[y] + rng.normal(scale=2.5, size=(n, dim))
    return x, y, n_classes


def digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data / 16.0, data.target, 10


def split(x, y, rng, test_fraction=0.3):
    order = rng.permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def loss_and_grads(w, b, x, y):
    """Mean NLL and its gradients with respect to W and b."""
    n = len(y)
    log_p = numsoft.log_softmax(x @ w + b, axis=-1)
    loss = -log_p[np.arange(n), y].mean()
    dlog_p = np.zeros_like(log_p)
    dlog_p[np.arange(n), y] = -1.0 / n
    dlogits = numsoft.log_softmax_backward(log_p, dlog_p, axis=-1)
    return loss, x.T @ dlogits, dlogits.sum(axis=0), dlogits


def accuracy(w, b, x, y) -> float:
    return float(np.mean(np.argmax(x @ w + b, axis=1) == y))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a CI-sized run")
    parser.add_argument("--dataset", choices=["synthetic", "digits"], default="synthetic")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
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
    x_train, y_train, x_test, y_test = split(x, y, rng)
    mu, sd = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8
    x_train, x_test = (x_train - mu) / sd, (x_test - mu) / sd

    w = np.zeros((x.shape[1], n_classes))
    b = np.zeros(n_classes)

    # One check of the backward pass against the closed form (softmax - onehot)/N.
    w0 = rng.normal(scale=0.1, size=w.shape)
    *_, dlogits = loss_and_grads(w0, b, x_train, y_train)
    onehot = np.eye(n_classes)[y_train]
    closed = (numsoft.softmax(x_train @ w0 + b) - onehot) / len(y_train)
    grad_err = float(np.max(np.abs(dlogits - closed)))
    print(f"backward check: max |log_softmax_backward - (softmax - onehot)/N| = {grad_err:.2e}")

    print(
        f"{args.dataset}: {len(y_train)} train / {len(y_test)} test samples, "
        f"{x.shape[1]} features, {n_classes} classes; {steps} steps of gradient descent"
    )
    print(f"{'step':>5}  {'train loss':>10}  {'train acc':>9}  {'test acc':>8}")
    for step in range(steps + 1):
        loss, dw, db, _ = loss_and_grads(w, b, x_train, y_train)
        if step % max(1, steps // 10) == 0:
            print(
                f"{step:5d}  {loss:10.4f}  {accuracy(w, b, x_train, y_train):9.3f}  "
                f"{accuracy(w, b, x_test, y_test):8.3f}"
            )
        w -= args.lr * dw
        b -= args.lr * db

    train_acc, test_acc = accuracy(w, b, x_train, y_train), accuracy(w, b, x_test, y_test)
    chance = 1.0 / n_classes
    print(
        f"final: train accuracy {train_acc:.3f}, test accuracy {test_acc:.3f} (chance {chance:.3f})"
    )
    if grad_err > 1e-12:
        print("FAIL: log_softmax_backward disagrees with the closed-form gradient")
        return 1
    if test_acc < 3 * chance:
        print("FAIL: the classifier is not clearly better than chance")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
