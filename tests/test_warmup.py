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

ROOT = Path(__file__).resolve().parents[1]


def test_plan_covers_each_function_in_both_dtypes():
    jobs = warmup.plan(("softmax", "sparsemax"), everything=False)
    assert [(j.function, j.dtype) for j in jobs] == [
        ("softmax", "float32"), ("softmax", "float64"),
        ("sparsemax", "float32"), ("sparsemax", "float64"),
    ]  # fmt: skip
    core, variant = jobs[0].cases, jobs[2].cases
    # what "auto" picks on this machine, small arrays and large
    assert {c.algorithm for c in core} == {"auto", warmup.large_algorithm()}
    assert {c.algorithm for c in variant} == {"auto"}  # variants choose their own
    assert {c.axis for c in core} == {-1, 0}
    everything = warmup.plan(("softmax",), everything=True)[0].cases
    assert {c.algorithm for c in everything} >= {
        "three-pass-reload", "three-pass-store", "two-pass", "online"
    }  # fmt: skip
    assert any(c.shape[0] == 1 and c.label.startswith("split") for c in everything)


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
    later = textwrap.dedent("""
        import json, numpy as np, numsoft
        from numsoft.cpu.paths import copies
        x = np.random.default_rng(0).standard_normal((64, 100))
        numsoft.logsumexp(x.astype(np.float32)), numsoft.logsumexp(x, axis=0)
        stats = [k.stats for k in copies()]
        print(json.dumps([sum(sum(s.cache_hits.values()) for s in stats),
                          sum(sum(s.cache_misses.values()) for s in stats)]))
    """)
    proc = subprocess.run([sys.executable, "-c", later], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    hits, misses = json.loads(proc.stdout.strip().splitlines()[-1])
    assert hits >= 2 and misses == 0
