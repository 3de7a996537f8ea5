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
    assert lengths == {"short", "medium", "long", "axis0-short", "axis0-medium"}


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
