"""A classifier over a tree of classes, trained coarse labels first and fine labels later.

Nine fine classes fall into three coarse ones (the tree: three roots with three
children each). The model is ``logits = X @ W + b`` with one logit per node of the tree
(12), and ``numsoft.groups.hierarchical_cross_entropy`` gives the loss ``−log p(label)``
and its gradient, where p multiplies the softmax among siblings down the tree. A label
may be any node, so the curriculum is a change of labels only: the first half of the
steps asks for the coarse class of every sample, the second half for the fine class.
The script checks the loss's gradient against finite differences once, then prints the
coarse and fine test accuracy after each stage; the fine stage must keep the coarse
accuracy and raise the fine one well above chance.

    python examples/class_tree.py
    python examples/class_tree.py --small     # fewer samples and steps, for CI
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

try:
    from numsoft.groups import hierarchical_cross_entropy, hierarchical_softmax
except ImportError as exc:  # a numsoft without numsoft.groups
    print(f"skipped: {exc}")
    sys.exit(77)

COARSE, FINE_PER_COARSE = 3, 3
#: nodes 0-2: the coarse classes (roots); node 3 + 3c + k: fine class k of coarse class c
PARENTS = np.array([-1] * COARSE + [c for c in range(COARSE) for _ in range(FINE_PER_COARSE)])
FINE_NODES = np.arange(COARSE, PARENTS.size)


def make_data(n: int, rng: np.random.Generator, dim: int = 16):
    """Fine classes as Gaussian clouds; the clouds of one coarse class lie near each other."""
    coarse_centres = rng.normal(scale=4.0, size=(COARSE, dim))
    fine_centres = np.repeat(coarse_centres, FINE_PER_COARSE, axis=0)
    fine_centres += rng.normal(scale=1.5, size=fine_centres.shape)
    fine = rng.integers(0, FINE_NODES.size, n)
    x = fine_centres[fine] + rng.normal(scale=1.6, size=(n, dim))
    return x, FINE_NODES[fine]  # labels as nodes of the tree


def train(x, labels, w, b, steps: int, lr: float):
    for _ in range(steps):
        loss, g = hierarchical_cross_entropy(x @ w + b, labels, PARENTS, return_grad=True)
        w -= lr * (x.T @ g)
        b -= lr * g.sum(axis=0)
    return float(loss)


def accuracy(x, fine_labels, w, b):
    """(coarse, fine) accuracy of the most probable coarse node and leaf."""
    p = hierarchical_softmax(x @ w + b, PARENTS)
    coarse_pred = p[:, :COARSE].argmax(axis=1)
    fine_pred = FINE_NODES[p[:, FINE_NODES].argmax(axis=1)]
    coarse_true = PARENTS[fine_labels]
    return float(np.mean(coarse_pred == coarse_true)), float(np.mean(fine_pred == fine_labels))


def check_gradient(x, labels, w, b) -> float:
    """Largest gap between the loss's gradient and central differences, on a few logits."""
    logits = x[:8] @ w + b
    _, g = hierarchical_cross_entropy(logits, labels[:8], PARENTS, return_grad=True)
    gap, h = 0.0, 1e-6
    for i, j in [(0, 0), (1, 4), (2, 7), (3, 11), (5, 2)]:
        e = np.zeros_like(logits)
        e[i, j] = h
        up = hierarchical_cross_entropy(logits + e, labels[:8], PARENTS)
        down = hierarchical_cross_entropy(logits - e, labels[:8], PARENTS)
        gap = max(gap, abs((up - down) / (2 * h) - g[i, j]))
    return gap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="fewer samples and steps")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, steps = (2000, 150) if args.small else (20000, 400)
    x, fine = make_data(2 * n, rng)
    x_train, fine_train, x_test, fine_test = x[:n], fine[:n], x[n:], fine[n:]
    w = np.zeros((x.shape[1], PARENTS.size))
    b = np.zeros(PARENTS.size)

    gap = check_gradient(x_train, fine_train, rng.normal(size=w.shape), rng.normal(size=b.shape))
    print(f"gradient against central differences: largest gap {gap:.1e}")
    stages = [("coarse labels", PARENTS[fine_train]), ("fine labels", fine_train)]
    results = []
    for name, labels in stages:
        loss = train(x_train, labels, w, b, steps, lr=0.5 / n)
        coarse_acc, fine_acc = accuracy(x_test, fine_test, w, b)
        results.append((coarse_acc, fine_acc))
        print(f"after {steps} steps on {name:13s}: loss {loss:.3f}, test accuracy "
              f"coarse {coarse_acc:.3f} (chance {1 / COARSE:.3f}), "
              f"fine {fine_acc:.3f} (chance {1 / FINE_NODES.size:.3f})")  # fmt: skip
    (coarse_1, _), (coarse_2, fine_2) = results
    ok = gap < 1e-6 and coarse_1 > 0.9 and coarse_2 > 0.9 and fine_2 > 2.5 / FINE_NODES.size
    print("check:", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
