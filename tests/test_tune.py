"""The measured plan (``python -m numsoft tune``): ``auto`` follows it on the machine it
was measured on, ignores it (one warning) anywhere else or when damaged, and falls back
to the built-in rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import numsoft
from numsoft.cpu import auto, measured_plan
from numsoft.vocabulary import (
    ALGORITHM_NAMES,
    ONLINE,
    THREE_PASS_RELOAD,
    THREE_PASS_STORE,
    TWO_PASS,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: A class the built-in rule gives three-pass-store (it fits the L2).
IN_L2 = ("logsumexp", 8, 64, 512 * 64 * 8)
IN_L2_NAME = "logsumexp float64 L2 short"


@pytest.fixture
def plan_file(tmp_path, monkeypatch):
    path = tmp_path / "plan.json"
    monkeypatch.setenv("NUMSOFT_PLAN_FILE", str(path))
    monkeypatch.delenv("NUMSOFT_PLAN", raising=False)
    measured_plan.reset()
    yield path
    monkeypatch.undo()
    measured_plan.reset()


def _choose():
    kind, itemsize, n, nbytes = IN_L2
    return auto.choose_algorithm(n, itemsize, nbytes // (n * itemsize), reduction=True)


def test_auto_follows_the_plan_measured_here(plan_file):
    assert _choose() == THREE_PASS_STORE  # the built-in rule, no plan yet
    measured_plan.write(plan_file, {IN_L2_NAME: "online"}, {IN_L2_NAME: {"online": 1e-6}})
    assert _choose() == ONLINE
    assert measured_plan.case_class(*IN_L2) == tuple(IN_L2_NAME.split())
    assert "measured on this machine (1 classes" in measured_plan.status()
    # other classes keep the built-in rule
    assert auto.choose_algorithm(64, 4, 512, exp_output=True) == THREE_PASS_STORE


def test_the_default_calls_follow_a_new_plan(plan_file):
    from numsoft.cpu import paths, rows

    x = np.random.default_rng(0).normal(size=(512, 64))
    before = numsoft.logsumexp(x)
    builtin_driver = rows.default_logsumexp_plan(x.dtype, (512, 64, 1))[0]
    measured_plan.write(plan_file, {IN_L2_NAME: "three-pass-reload"}, {})
    driver = rows.default_logsumexp_plan(x.dtype, (512, 64, 1))[0]
    assert driver is not builtin_driver  # the cached plan was dropped
    reload = paths.specialize(
        rows.logsumexp_rows_parallel, **rows.path_constants(THREE_PASS_RELOAD, n=64, itemsize=8)
    )
    assert driver is reload
    np.testing.assert_allclose(numsoft.logsumexp(x), before, rtol=1e-13)


def test_numsoft_plan_0_ignores_it(plan_file, monkeypatch):
    measured_plan.write(plan_file, {IN_L2_NAME: "online"}, {})
    monkeypatch.setenv("NUMSOFT_PLAN", "0")
    measured_plan.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _choose() == THREE_PASS_STORE
    assert "NUMSOFT_PLAN=0" in measured_plan.status()


def test_a_plan_from_another_machine_is_ignored_with_one_warning(plan_file):
    measured_plan.write(plan_file, {IN_L2_NAME: "online"}, {})
    data = json.loads(plan_file.read_text())
    data["machine"]["cpu"] = "another-cpu"
    data["machine"]["threads"] = 64
    plan_file.write_text(json.dumps(data))
    measured_plan.reset()
    with pytest.warns(measured_plan.PlanWarning, match="another machine.*cpu, threads differ"):
        assert _choose() == THREE_PASS_STORE
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read once: no second warning
        assert _choose() == THREE_PASS_STORE


@pytest.mark.parametrize(
    "text",
    ["{not json", '{"format": 99}', '{"format": 1, "winners": {"x": "fastest"}}', "[]"],
)
def test_a_damaged_plan_is_ignored_with_one_warning(plan_file, text):
    plan_file.write_text(text)
    with pytest.warns(measured_plan.PlanWarning, match="damaged plan"):
        assert _choose() == THREE_PASS_STORE


def test_cases_cover_every_class_the_rule_tells_apart():
    from numsoft import tune

    names = {case.name for case in tune.cases()}
    assert len(names) == len(tune.cases())
    for case in tune.cases():  # each representative is of its own class
        itemsize = np.dtype(case.dtype).itemsize
        nbytes = case.shape[0] * case.shape[1] * itemsize
        got = measured_plan.case_class(case.kind, itemsize, case.n, nbytes, case.axis == 0)
        assert " ".join(got) == case.name
    kinds = {name.split()[0] for name in names}
    places = {name.split()[2] for name in names}
    assert kinds == {"softmax", "log_softmax", "logsumexp"}
    assert places == {"L2", "LLC", "memory"}
    lengths = {name.split()[3] for name in names}
    assert lengths == {"tiny", "short", "medium", "long", "axis0-short", "axis0-medium"}


def test_rows_of_32_follow_their_own_class(plan_file):
    # rows up to 48 run in row tiles or as vector lanes: a winner timed on rows of 64
    # does not reach them, and one timed on rows of 32 does not reach rows of 64
    for n, name in ((32, "tiny"), (48, "tiny"), (49, "short"), (64, "short")):
        assert measured_plan.case_class("softmax", 4, n, 1 << 16)[3] == name
    assert measured_plan.case_class("softmax", 4, 32, 1 << 16, columns=True)[3] == "axis0-short"
    measured_plan.write(plan_file, {"softmax float32 L2 short": "online"}, {})
    rows = (1 << 14) // 32
    assert auto.choose_algorithm(32, 4, rows, exp_output=True) == THREE_PASS_STORE
    assert auto.choose_algorithm(64, 4, rows // 2, exp_output=True) == ONLINE
    measured_plan.write(plan_file, {"softmax float32 L2 tiny": "two-pass"}, {})
    assert auto.choose_algorithm(32, 4, rows, exp_output=True) == TWO_PASS
    assert auto.choose_algorithm(64, 4, rows // 2, exp_output=True) == THREE_PASS_STORE


def test_a_middle_axis_follows_its_own_class(plan_file):
    name = "softmax float32 memory axis0-short"
    measured_plan.write(plan_file, {name: "two-pass"}, {})
    n, inner = 64, (1 << 26) // 64
    assert auto.choose_algorithm(n, 4, inner, columns=True, exp_output=True) == TWO_PASS
    assert auto.builtin_algorithm(n, 4, inner, columns=True, exp_output=True) != TWO_PASS
    rows_class = auto.choose_algorithm(n, 4, inner, exp_output=True)  # not axis=0
    assert rows_class == auto.builtin_algorithm(n, 4, inner, exp_output=True)


def test_tune_command_writes_a_plan_and_check_compares(tmp_path):
    env = dict(os.environ, NUMSOFT_PLAN_FILE=str(tmp_path / "plan.json"))
    env.pop("NUMSOFT_PLAN", None)  # conftest's: this test reads the plan it writes
    cmd = [sys.executable, "-m", "numsoft", "tune", "--only", IN_L2_NAME, "--rounds", "1"]
    run = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert IN_L2_NAME in run.stdout and "plan written" in run.stdout
    data = json.loads((tmp_path / "plan.json").read_text())
    assert data["winners"][IN_L2_NAME] in ALGORITHM_NAMES
    assert set(data["seconds"][IN_L2_NAME]) == {*ALGORITHM_NAMES, "copy"}
    check = subprocess.run(
        [*cmd, "--check"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert check.returncode == 0, check.stderr[-2000:]
    assert "measured plan" in check.stdout and "plan written" not in check.stdout
    info = subprocess.run(
        [sys.executable, "-m", "numsoft", "info"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert "auto:" in info.stdout and "measured on this machine" in info.stdout


def test_the_plan_keeps_the_rules_pick_within_the_margin():
    from numsoft import tune

    case = next(c for c in tune.cases() if c.name == IN_L2_NAME)
    rule = tune.builtin_pick(case)
    assert rule == "three-pass-store"
    close = {"three-pass-store": 1.02, "online": 1.0, "two-pass": 1.5, "three-pass-reload": 1.5}
    assert tune.plan_choice(case, close) == rule
    clear = {**close, "three-pass-store": 1.10}
    assert tune.plan_choice(case, clear) == "online"


def test_a_plans_classes_are_timed_under_its_limits(plan_file, monkeypatch):
    # which structure wins a class depends on the limits (a row split or not, rows in
    # tiles or not): a plan's winners are timed under the limits it writes, a check's
    # under those in use
    from numsoft import tune
    from numsoft.cpu import rows

    seen = []

    def measure(case, rounds):
        seen.append(rows.tile_limit())
        return dict.fromkeys(tune.CANDIDATES, 1.0), 1.0

    def measure_limit(limit, rounds, context):  # the other way loses at every size
        return {size: {"below": 1.0, "beyond": 1.5} for size in limit.sizes}

    monkeypatch.setattr(tune, "measure", measure)
    monkeypatch.setattr(tune, "measure_limit", measure_limit)
    monkeypatch.setattr(tune, "compile_side_by_side", lambda chosen: 0.0)
    monkeypatch.setattr(tune, "other_running_threads", lambda: 0)  # a quiet machine
    tiles = next(lim for lim in tune.LIMITS if lim.name == "tile_max_n")
    measured = tiles.chosen(measure_limit(tiles, 1, {}))
    builtin = measured_plan.builtin_limits()["tile_max_n"]
    assert measured != builtin
    assert tune.run(only="float32 L2 long", out=lambda line: None) == 0  # no limit: built-in
    assert seen == [builtin] * 3
    seen.clear()
    assert tune.run(out=lambda line: None) == 0
    assert seen and set(seen) == {measured}
    assert rows.tile_limit() == measured  # the plan written is in use
    seen.clear()
    assert tune.run(check=True, only="float32 L2 long", out=lambda line: None) == 0
    assert seen == [measured] * 3


def test_a_departure_from_the_rule_is_timed_again(plan_file, monkeypatch):
    from numsoft import tune

    def measure(case, rounds):  # a busy moment: two-pass looked twice as fast
        return {**dict.fromkeys(tune.CANDIDATES, 2.0), "two-pass": 1.0}, 1.0

    monkeypatch.setattr(tune, "measure", measure)
    monkeypatch.setattr(tune, "compile_side_by_side", lambda chosen: 0.0)
    monkeypatch.setattr(tune, "other_running_threads", lambda: 0)
    tiny = ("softmax", "float32", "L2", "tiny")
    lines = []
    # timed again for real, two-pass is far behind store on rows of 32: the rule stays
    assert tune.run(only=" ".join(tiny), rounds=1, out=lines.append) == 0
    assert measured_plan.winners()[tiny] == THREE_PASS_STORE
    assert "the built-in rule's pick replaced in 0 classes (2 timed again)" in lines

    # confirmed the second time: the plan takes it
    def confirmed(calls, rounds):
        return {**dict.fromkeys(calls, 2.0), "two-pass": 1.0}

    monkeypatch.setattr(tune, "_alternate", confirmed)
    lines.clear()
    assert tune.run(only=" ".join(tiny), rounds=1, out=lines.append) == 0
    assert measured_plan.winners()[tiny] == TWO_PASS
    assert "the built-in rule's pick replaced in 2 classes (2 timed again)" in lines


def test_the_plans_limits_are_the_ones_calls_use(plan_file):
    from numsoft.cpu import rows, threads

    limits = {"serial_max_elements": 12288, "split_min_row": 16384, "tile_max_n": 4}
    measured_plan.write(plan_file, {}, {}, limits)
    assert rows.plan_rows(48, 256)[0] == rows.SERIAL  # 12288 elements: one thread now
    assert rows.rows_driver(6, "tiles", "rows") == "rows"
    assert "tile_max_n 4" in measured_plan.status()
    if threads.usable_threads() > 1:
        assert rows.plan_rows(1, 16384)[0] == rows.SPLIT
        assert rows.plan_rows(1, 16383)[0] != rows.SPLIT
    x = np.random.default_rng(1).normal(size=(300, 6)).astype(np.float32)
    expected = np.exp(x - x.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(numsoft.softmax(x), expected, rtol=2e-6)  # rows, not tiles
    measured_plan.write(plan_file, {}, {})  # a plan without limits: the built-in ones
    builtin = measured_plan.builtin_limits()
    assert builtin == {"serial_max_elements": 8192, "split_min_row": 1 << 15, "tile_max_n": 10}
    assert rows.plan_rows(48, 256)[0] != rows.SERIAL
    assert rows.rows_driver(6, "tiles", "rows") == "tiles"


@pytest.mark.parametrize(
    "limits", [{"serial_max_elements": -1}, {"tile_max_n": 2.5}, {"fastest_rows": 8}]
)
def test_a_plan_with_a_bad_limit_is_damaged(plan_file, limits):
    measured_plan.write(plan_file, {IN_L2_NAME: "online"}, {}, limits)
    with pytest.warns(measured_plan.PlanWarning, match="damaged plan"):
        assert _choose() == THREE_PASS_STORE
    assert measured_plan.builtin_limits()["tile_max_n"] == numsoft.cpu.rows.tile_limit()


def test_a_limit_splits_the_sizes_where_the_ways_lose_least():
    from numsoft.tune import LIMITS

    at_most = next(lim for lim in LIMITS if lim.at_most)
    at_least = next(lim for lim in LIMITS if not lim.at_most)

    def times(limit, ratios):  # beyond ÷ below at each size
        return {s: {"below": 1.0, "beyond": r} for s, r in zip(limit.sizes, ratios)}

    n = len(at_most.sizes)
    wins_from_third = [1.5, 1.2, 0.8, 0.8] + [0.5] * (n - 4)
    assert at_most.chosen(times(at_most, wins_from_third)) == at_most.sizes[1]
    assert at_most.chosen(times(at_most, [0.5] * n)) == at_most.sizes[0] // 2
    assert at_most.chosen(times(at_most, [1.5] * (n - 1) + [0.5])) == at_most.sizes[-2]
    # wins within the margin are ties, which keep the built-in value; a win that does
    # not last outweighs no loss
    builtin = measured_plan.builtin_limits()[at_most.name]
    assert at_most.chosen(times(at_most, [0.98] * n)) == builtin
    assert at_most.chosen(times(at_most, [0.5] + [1.5] * (n - 1))) == at_most.sizes[-1]
    # one size measured in a busy moment does not move the limit (the first size from
    # which "beyond" kept winning moved to the last one here)
    noisy = [*wins_from_third[:-1], 1.3]
    assert at_most.chosen(times(at_most, noisy)) == at_most.sizes[1]
    m = len(at_least.sizes)
    assert (
        at_least.chosen(times(at_least, [1.5, 1.2, 0.9] + [0.8] * (m - 3))) == (at_least.sizes[2])
    )
    assert at_least.chosen(times(at_least, [1.5] * m)) == 2 * at_least.sizes[-1]
    # a win by less than LIMIT_TIES is a tie, won by the split nearest the built-in value
    assert at_most.chosen(times(at_most, [1.5, 1.2, 0.9, 0.5] + [0.5] * (n - 4))) == builtin // 2
    # a size whose rounds do not agree on a winner is a tie, whatever its median says
    split = times(at_most, [1.5, 1.2, 1.5, 1.5, 1.5] + [0.5] * (n - 5))
    assert at_most.chosen(split) == at_most.sizes[4]
    split[at_most.sizes[4]]["quartiles"] = (0.9, 1.7)
    split[at_most.sizes[3]]["quartiles"] = (0.8, 1.6)
    assert at_most.chosen(split) == builtin
    assert at_most.value_for(8, "below") == 8 and at_most.value_for(8, "beyond") == 7
    assert at_least.value_for(8, "below") == 9 and at_least.value_for(8, "beyond") == 8


def test_tune_measures_a_limit(tmp_path):
    env = dict(os.environ, NUMSOFT_PLAN_FILE=str(tmp_path / "plan.json"))
    env.pop("NUMSOFT_PLAN", None)
    cmd = [sys.executable, "-m", "numsoft", "tune", "--only", "limit tile", "--rounds", "1"]
    run = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "limit tile_max_n" in run.stdout and "built-in      10" in run.stdout
    data = json.loads((tmp_path / "plan.json").read_text())
    assert set(data["limits"]) == {"tile_max_n"}
    assert 2 <= data["limits"]["tile_max_n"] <= 16


def test_a_busy_machine_is_named_and_keeps_the_earlier_plan(plan_file, monkeypatch):
    from numsoft import tune

    assert tune.busy_signs([0.02, 0.05], [0, 0, None]) == []
    assert "spread 40%" in tune.busy_signs([0.4, 0.5, 0.1], [])[0]
    assert "2 threads of other processes" in tune.busy_signs([], [2, 3, 0])[0]

    def measure(case, rounds):  # the first structure wins by far
        return {a: 1.0 + (a != tune.CANDIDATES[0]) for a in tune.CANDIDATES}, 1.0

    others = []
    monkeypatch.setattr(tune, "measure", measure)
    monkeypatch.setattr(tune, "compile_side_by_side", lambda chosen: 0.0)
    monkeypatch.setattr(tune, "other_running_threads", lambda: others[0])
    lines = []
    others[:] = [0]
    assert tune.run(only=IN_L2_NAME, out=lines.append) == 0  # quiet: written
    first = plan_file.read_text()
    others[:] = [3]
    assert tune.run(only=IN_L2_NAME, out=lines.append) == 0
    assert any("looked busy" in line for line in lines)
    assert any("kept the plan measured before" in line for line in lines)
    assert plan_file.read_text() == first
    lines.clear()
    assert tune.run(only=IN_L2_NAME, out=lines.append, force=True) == 0
    assert any("plan written" in line for line in lines)


def test_a_check_prints_the_plans_worst_case_against_the_rule(plan_file, monkeypatch):
    from numsoft import tune

    case = next(c for c in tune.cases() if c.name == IN_L2_NAME)
    rule = tune.builtin_pick(case)
    other = next(a for a in tune.CANDIDATES if a != rule)
    monkeypatch.setattr(tune, "compile_side_by_side", lambda chosen: 0.0)
    monkeypatch.setattr(tune, "other_running_threads", lambda: 0)
    # the plan picks `other`, which then runs 25 % slower than the rule's pick
    monkeypatch.setattr(tune, "measure", lambda c, r: ({a: 1.0 for a in tune.CANDIDATES}, 1.0))
    tune.run(only=IN_L2_NAME, out=lambda line: None, force=True)
    data = json.loads(plan_file.read_text())
    data["winners"][IN_L2_NAME] = other
    plan_file.write_text(json.dumps(data))
    measured_plan.reset()
    times = {a: 1.0 for a in tune.CANDIDATES} | {other: 1.25}
    monkeypatch.setattr(tune, "measure", lambda c, r: (times, 1.0))
    lines = []
    assert tune.run(check=True, only=IN_L2_NAME, out=lines.append) == 0
    assert any(f"at worst 25.0% slower ({IN_L2_NAME})" in line for line in lines), lines
