"""``python -m numsoft warmup``: the paths it compiles are the ones later calls load."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from numsoft import warmup
from numsoft.__main__ import main
from numsoft.cpu.limits import SERIAL_MAX_ELEMENTS, TILE_MAX_N

ROOT = Path(__file__).resolve().parents[1]


def test_plan_covers_each_function_in_both_dtypes():
    jobs = warmup.plan(("softmax", "sparsemax"), everything=False)
    assert [(j.function, j.dtype) for j in jobs] == [
        ("softmax", "float32"), ("softmax", "float64"),
        ("sparsemax", "float32"), ("sparsemax", "float64"),
    ]  # fmt: skip
    core, variant = jobs[0].cases, jobs[2].cases
    # what "auto" picks on this machine, small arrays and large
    assert {c.algorithm for c in core} == {"auto", *warmup.large_algorithms("softmax", 4)}
    assert {c.algorithm for c in variant} == {"auto"}  # variants choose their own
    assert {c.axis for c in core} == {-1, 0}
    # row tiles (rows of at most TILE_MAX_N), one thread and several, and 1-D input
    lengths = {c.shape[-1] for c in core if c.axis == -1 and len(c.shape) == 2}
    assert TILE_MAX_N in lengths and TILE_MAX_N + 1 in lengths
    assert any(len(c.shape) == 1 for c in core)
    rows_of_10 = [c.shape[0] * c.shape[1] for c in core if c.shape[1:] == (TILE_MAX_N,)]
    assert min(rows_of_10) <= SERIAL_MAX_ELEMENTS < max(rows_of_10)
    everything = warmup.plan(("softmax",), everything=True)[0].cases
    assert {c.algorithm for c in everything} >= {
        "three-pass-reload", "three-pass-store", "two-pass", "online"
    }  # fmt: skip


def test_unknown_function_is_an_error(capsys):
    assert main(["warmup", "softmaxx"]) == 2
    assert "unknown function(s) ['softmaxx']" in capsys.readouterr().out


@pytest.mark.parametrize("function", warmup.ALL)
def test_every_sample_call_runs(function):
    job = warmup.Job(function, "float64", (warmup.Case("tiny", (3, 5)),
                                           warmup.Case("tiny axis=0", (3, 5), axis=0)))  # fmt: skip
    assert warmup.run_job(job)[0] is job


def test_a_later_process_loads_what_warmup_compiled(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "numsoft", "warmup", "logsumexp", "--jobs", "2"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "[2/2] logsumexp" in run.stdout and "done in" in run.stdout
    # Common calls (issue 37): rows of 3, 10, 32, 100 and 4096, 1-D inputs short and
    # split across threads, another axis; a warmed-up process compiles none of them.
    later = textwrap.dedent("""
        import json, numpy as np, numsoft
        from numba.core import event
        rng = np.random.default_rng(0)
        shapes = [((64, n), -1) for n in (3, 10, 32, 100, 4096)] + [((8, 3), -1)]
        shapes += [((10,), -1), ((1000,), -1), ((1 << 17,), -1), ((64, 100), 0), ((500, 600), 0)]
        with event.install_recorder("numba:compile") as compiles:
            for dtype in (np.float32, np.float64):
                for shape, axis in shapes:
                    numsoft.logsumexp(rng.standard_normal(shape).astype(dtype), axis=axis)
        names = {e.data["dispatcher"].py_func.__qualname__ for _, e in compiles.buffer}
        print(json.dumps(sorted(names)))
    """)
    proc = subprocess.run([sys.executable, "-c", later], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
