"""Kernels shipped in the wheel (``numsoft.cpu.shipped``, built by ``numsoft._build``).

A small shipment is built here as the wheel build builds one (a process compiling for
an x86-64 level, its cache copied in the package's layout with a manifest), then
loaded by new processes with an empty Numba cache: they compile nothing for the calls
it holds and give the bits the level's kernels gave; turned off, damaged or stale,
the same calls compile and agree within the documented tolerance.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from llvmlite import binding as llvm

from numsoft.cpu import machine, shipped

HOST = {name for name, on in llvm.get_host_cpu_features().items() if on}
LEVELS = machine.supported_levels(HOST)
ROOT = pathlib.Path(__file__).resolve().parents[1]

#: The calls: a short-row path and a column path of two functions, two dtypes.
CALLS = textwrap.dedent(
    """
    import numpy as np
    import numsoft
    rng = np.random.default_rng(3)
    x32 = rng.normal(size=(6, 10)).astype(np.float32)
    x64 = rng.normal(size=(6, 10))
    results = [numsoft.softmax(x32), numsoft.logsumexp(x64, axis=0)]
    """
)


def _run(code: str, tmp_path, **env) -> dict:
    """Run ``code`` (which sets ``report``) in a new process; return ``report``."""
    out = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    script = code + f"\nimport json; open({str(out)!r}, 'w').write(json.dumps(report))\n"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    full_env.update(env)
    subprocess.run([sys.executable, "-c", script], env=full_env, cwd=ROOT, check=True)
    return json.loads(out.read_text())


def _load_and_count(tmp_path, kernels, **env) -> dict:
    """A new process with an empty cache and ``kernels`` as the shipped folder."""
    code = textwrap.dedent(
        f"""
        import pathlib, warnings
        warnings.simplefilter("always")
        from numsoft.cpu import shipped
        shipped.KERNELS_DIR = pathlib.Path({str(kernels)!r})
        from numba.core import event
        with warnings.catch_warnings(record=True) as caught:
            with event.install_recorder("numba:compile") as compiles:
        """
    )
    code += textwrap.indent(CALLS, " " * 8)
    code += textwrap.dedent(
        """
        report = {
            "compiles": len(compiles.buffer),
            "status": shipped.status()[1],
            "results": [r.tolist() for r in results],
            "warnings": [str(w.message) for w in caught],
        }
        """
    )
    cache = tmp_path / f"empty-{len(list(tmp_path.glob('empty-*')))}"
    return _run(code, tmp_path, NUMBA_CACHE_DIR=str(cache), **env)


@pytest.fixture(scope="module")
def shipment(tmp_path_factory):
    """The calls compiled for the highest level this CPU runs, shipped as a wheel does."""
    if not LEVELS or LEVELS[0] == "x86-64-v2":
        pytest.skip("this CPU runs no level a wheel ships (x86-64-v3 or v4)")
    tmp = tmp_path_factory.mktemp("shipment")
    kernels = tmp / "kernels"
    code = (
        "from numsoft.cpu.cache_entries import package_source_digest\n"
        "sources = package_source_digest()\n"
        + CALLS
        + textwrap.dedent(
            f"""
            import numba, pathlib
            from numsoft._build.kernels import write_level
            paths = write_level(pathlib.Path(numba.config.CACHE_DIR),
                                pathlib.Path({str(kernels / LEVELS[0])!r}), sources)
            report = {{"paths": paths, "results": [r.tolist() for r in results]}}
            """
        )
    )
    built = _run(
        code,
        tmp,
        NUMBA_CPU_NAME=LEVELS[0],
        NUMBA_CPU_FEATURES="",
        NUMBA_CACHE_DIR=str(tmp / "build-cache"),
    )
    return kernels, built


def test_shipped_kernels_load_without_compiling(shipment, tmp_path):
    kernels, built = shipment
    assert built["paths"] > 0
    got = _load_and_count(tmp_path, kernels)
    assert got["status"].startswith(f"shipped for {LEVELS[0]}")
    assert got["compiles"] == 0
    assert got["results"] == built["results"]  # the level's bits, in every process
    assert got["warnings"] == []


def test_turned_off_they_compile_and_agree(shipment, tmp_path):
    kernels, built = shipment
    got = _load_and_count(tmp_path, kernels, NUMSOFT_SHIPPED_KERNELS="0")
    assert "turned off" in got["status"]
    assert got["compiles"] > 0
    for g, w in zip(got["results"], built["results"], strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6)  # float32's bound covers both
    assert got["warnings"] == []


def test_other_numba_or_sources_compile_without_a_word(shipment, tmp_path):
    kernels, built = shipment
    stale = tmp_path / "stale"
    manifest_of = stale / LEVELS[0] / "manifest.json"
    for field, value, words in (
        ("numba", "0.1.0", "shipped for Numba 0.1.0"),
        ("sources", "0" * 64, "other sources"),
    ):
        subprocess.run(["cp", "-r", str(kernels), str(stale)], check=True)
        manifest = json.loads(manifest_of.read_text())
        manifest[field] = value
        manifest_of.write_text(json.dumps(manifest))
        got = _load_and_count(tmp_path, stale)
        assert words in got["status"]
        assert got["compiles"] > 0
        assert got["warnings"] == []
        subprocess.run(["rm", "-r", str(stale)], check=True)


def test_a_damaged_shipped_file_is_skipped_with_one_warning(shipment, tmp_path):
    kernels, built = shipment
    damaged = tmp_path / "damaged"
    subprocess.run(["cp", "-r", str(kernels), str(damaged)], check=True)
    for data in damaged.rglob("*.nbc"):
        data.write_bytes(data.read_bytes()[:100])
    got = _load_and_count(tmp_path, damaged)
    assert got["compiles"] > 0
    assert len(got["warnings"]) == 1 and "unreadable shipped kernel" in got["warnings"][0]
    for g, w in zip(got["results"], built["results"], strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6)


def test_file_names_are_numbas():
    from numsoft.cpu.rows import softmax_rows_parallel

    dispatcher = softmax_rows_parallel.dispatcher
    assert shipped.filename_base(dispatcher.py_func) == dispatcher._cache._impl.filename_base


def test_levels_from_features():
    v3 = machine.level_features("x86-64-v3")
    assert machine.supported_levels(v3) == ("x86-64-v3", "x86-64-v2")
    assert machine.supported_levels(v3 | {"avx512f"}) == ("x86-64-v3", "x86-64-v2")
    assert machine.supported_levels(machine.level_features("x86-64-v4"))[0] == "x86-64-v4"
    assert machine.supported_levels({"neon"}) == ()


@pytest.mark.parametrize(("level", "lanes"), [("x86-64-v3", 8), ("x86-64-v4", 16)])
def test_compiled_in_constants_come_from_the_level(level, lanes, monkeypatch):
    from numba.core import config

    monkeypatch.setattr(config, "CPU_NAME", level)
    monkeypatch.setattr(config, "CPU_FEATURES", "")
    assert ("avx512f" in machine.target_features()) == (lanes == 16)
    monkeypatch.setattr(config, "CPU_FEATURES", "-avx512f")
    assert "avx512f" not in machine.target_features()


def test_a_source_build_ships_no_kernels_left_in_build_by_an_earlier_one(tmp_path):
    # setuptools copies the package into build/lib and keeps what an earlier build left
    # there; pip builds a source tree in place, so kernels of an earlier build shipped in
    # a wheel built with NUMSOFT_BUILD_KERNELS=0
    import shutil
    import zipfile

    root = pathlib.Path(__file__).resolve().parents[1]
    src = tmp_path / "src"
    shutil.copytree(root / "numsoft", src / "numsoft",
                    ignore=shutil.ignore_patterns("__pycache__", "_kernels"))  # fmt: skip
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(root / name, src / name)
    stale = src / "build" / "lib" / "numsoft" / "_kernels" / "x86-64-v4"
    stale.mkdir(parents=True)
    (stale / "manifest.json").write_text("{}")
    env = dict(os.environ, NUMSOFT_BUILD_KERNELS="0")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
           "-w", str(tmp_path / "out"), str(src)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "out").glob("numsoft-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "numsoft/py.typed" in names
    assert not [n for n in names if "_kernels" in n]
