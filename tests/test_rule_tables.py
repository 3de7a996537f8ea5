"""The built-in rule of ``algorithm="auto"`` scored against every tune table in
``asv_bench/tune_tables/`` (``python -m numsoft tune`` on each CPU measured): for each
class, the seconds of the rule's pick ÷ the best pass structure's, read from the table
(no timing), with the rule run as on that machine (its caches, vector width, threads
and the limits the classes were timed under).

    python -m pytest tests/test_rule_tables.py -s -n 0   # prints each table's worst
"""

from __future__ import annotations

import contextlib
import json
import pathlib

import numpy as np
import pytest

from numsoft import tune
from numsoft.cpu import auto, limits, machine
from numsoft.vocabulary import ALGORITHM_NAMES

TABLES = sorted((pathlib.Path(__file__).parents[1] / "asv_bench" / "tune_tables").glob("*.json"))

#: No class above this loss, on any table.
WORST = 1.10
#: At least this share of each table's classes within ``CLOSE``.
SHARE, CLOSE = 0.90, 1.03


@contextlib.contextmanager
def as_on(data: dict, monkeypatch):
    """The rule's and the case set's view of the machine a table was measured on."""
    m = data["machine"]
    caches = {1: m["l1d"], 2: m["l2"]}
    lanes = 16 if "avx512f" in m["features"].split() else 8 if "avx2" in m["features"] else 4
    with monkeypatch.context() as mp:
        for module in (auto, tune, machine):
            for name, value in (
                ("data_cache_bytes", caches.__getitem__),
                ("last_level_cache_bytes", lambda: m["last_level"]),
                ("float32_lanes", lambda: lanes),
            ):
                if hasattr(module, name):
                    mp.setattr(module, name, value)
        timed = data.get("timed_under", data.get("limits", {}))
        mp.setattr(limits, "split_min_row", timed.get("split_min_row", limits.SPLIT_MIN_ROW))
        yield m["threads"]


def score(path: pathlib.Path, monkeypatch) -> dict[str, tuple[str, float]]:
    """Class name → (the rule's pick, its seconds ÷ the best's)."""
    data = json.loads(path.read_text())
    scores = {}
    with as_on(data, monkeypatch) as threads:
        for case in tune.cases():
            seconds = data["seconds"].get(case.name)
            if seconds is None:
                continue
            itemsize = np.dtype(case.dtype).itemsize
            code = auto.builtin_algorithm(case.n, itemsize, case.rows, threads, **case.flags)
            pick = ALGORITHM_NAMES[code]
            best = min(seconds[a] for a in ALGORITHM_NAMES)
            scores[case.name] = (pick, seconds[pick] / best)
    return scores


@pytest.mark.parametrize("path", TABLES, ids=[p.stem for p in TABLES])
def test_the_built_in_rule_is_close_to_the_best_on_every_measured_cpu(path, monkeypatch):
    scores = score(path, monkeypatch)
    assert len(scores) >= 80, f"{path.name}: only {len(scores)} classes scored"
    worst = max(scores.items(), key=lambda item: item[1][1])
    close = sum(ratio <= CLOSE for _, ratio in scores.values()) / len(scores)
    print(f"\n{path.stem}: {len(scores)} classes, {close:.0%} within {CLOSE}, worst "
          f"{worst[1][1]:.3f} ({worst[0]}: {worst[1][0]})")  # fmt: skip
    for name, (pick, ratio) in sorted(scores.items(), key=lambda item: -item[1][1])[:6]:
        print(f"  {ratio:.3f}  {name}: {pick}")
    assert worst[1][1] <= WORST, worst
    assert close >= SHARE, close


def test_the_scoring_fails_a_rule_that_misses(monkeypatch, tmp_path):
    # the same table with the rule's every pick made 20 % slower than the best fails it
    data = json.loads(TABLES[0].read_text())
    picks = score(TABLES[0], monkeypatch)
    for name, (pick, _) in picks.items():
        seconds = data["seconds"][name]
        best = min(seconds[a] for a in ALGORITHM_NAMES)
        seconds[pick] = 1.2 * best
        for a in ALGORITHM_NAMES:
            if a != pick:
                seconds[a] = max(seconds[a], best)
    slowed = tmp_path / TABLES[0].name
    slowed.write_text(json.dumps(data))
    with pytest.raises(AssertionError):
        test_the_built_in_rule_is_close_to_the_best_on_every_measured_cpu(slowed, monkeypatch)
    assert machine.last_level_cache_bytes() > 0  # the machine's own facts after the context
