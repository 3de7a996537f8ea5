"""``python -m numsoft``: the demo's table, its tolerance check and its busy-machine note.

The note's two signs are tested on set timings and thread counts: the rounds' real
spread depends on what else the machine runs (a CI machine building wheels beside the
suite spreads them past the note's threshold)."""

import re

import numpy as np

from numsoft import __main__ as demo


def _run(capsys, monkeypatch, others: int, round_times=None) -> tuple[int, str]:
    """The demo on 8 rows of 100, ``others`` threads of other processes running, and each
    call's seconds per round ``round_times`` (an array; None: timed for real)."""
    monkeypatch.setattr(demo, "other_running_threads", lambda: others)
    if round_times is not None:
        monkeypatch.setattr(
            demo, "_timed_rounds", lambda rounds, calls: {name: round_times for name in calls}
        )
    code = demo.main(["--rows", "8", "--cols", "100", "--repeats", "2"])
    return code, capsys.readouterr().out


def test_the_demo_checks_every_algorithm_and_prints_ratios_with_their_range(capsys, monkeypatch):
    code, out = _run(capsys, monkeypatch, others=0, round_times=np.array([1e-3, 1.1e-3]))
    assert code == 0 and "All errors within tolerance" in out
    assert "median over 2 rounds of the best of 3 calls in a row" in out
    rows = [
        line for line in out.splitlines() if re.match(r"(softmax|log_softmax|logsumexp) ", line)
    ]
    assert len(rows) == 3 * 2 * 5  # functions x dtypes x (auto + four pass structures)
    ratio = r"\d+\.\dx \(\d+\.\d-\d+\.\d\)"
    assert all(len(re.findall(ratio, row)) == 2 for row in rows), rows  # NumPy and SciPy
    assert "looks busy" not in out


def test_the_demo_says_when_the_machine_is_busy(capsys, monkeypatch):
    code, out = _run(capsys, monkeypatch, others=2)
    assert code == 0
    assert "the machine looks busy" in out
    assert "2 threads of other processes running" in out
    assert not re.search(r"\b0 of \d+ rows", out)  # a sign it did not see is not named


def test_the_demo_says_when_its_rounds_spread(capsys, monkeypatch):
    # every call's median round 1.5x its best: past the 30 % of BUSY_SPREAD in all 30 rows
    code, out = _run(capsys, monkeypatch, others=0, round_times=np.array([1e-3, 2e-3]))
    assert code == 0
    assert "the machine looks busy (30 of 30 rows' rounds spread more than 30% above" in out
    assert "threads of other processes" not in out


def test_the_demo_names_each_call_before_it_compiles(capsys, monkeypatch):
    _, out = _run(capsys, monkeypatch, others=0)
    first = out.splitlines()[1]  # the line after the header: the first function's paths
    assert first.startswith("  softmax float32: auto ") and first.endswith(" ready")
    assert all(f" {a} " in first for a in ("three-pass-reload", "two-pass", "online"))
