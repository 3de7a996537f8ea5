"""``python -m numsoft``: the demo's table, its tolerance check and its busy-machine note."""

import re

from numsoft import __main__ as demo


def _run(capsys, monkeypatch, others: int) -> tuple[int, str]:
    monkeypatch.setattr(demo, "_others_running", lambda: others)
    code = demo.main(["--rows", "8", "--cols", "100", "--repeats", "2"])
    return code, capsys.readouterr().out


def test_the_demo_checks_every_algorithm_and_prints_ratios_with_their_range(capsys, monkeypatch):
    code, out = _run(capsys, monkeypatch, others=0)
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
    assert "the machine looks busy" in out and "other processes running: 2" in out
