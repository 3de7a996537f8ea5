"""The GPU benchmark script runs end to end (``--smoke``), so a GPU session is not spent
finding a bug in it. Under the simulator its timings are meaningless; the test checks
which rows it reports and how it labels them."""

import importlib.util
import json
import pathlib

from numsoft.cuda import launch

SCRIPT = pathlib.Path(__file__).parents[2] / "asv_bench" / "gpu_roofline.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("gpu_roofline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _regime(shape, axis):
    """The launch regime of a 2-D ``shape`` normalized over ``axis`` (-1 or 0)."""
    if axis == -1:
        return launch.plan(shape[0], shape[1], 1).regime
    return launch.plan(shape[1], shape[0], shape[1]).regime


def test_smoke_run_reports_every_case(tmp_path, capsys):
    roofline = _load_script()
    out = tmp_path / "roofline.json"
    assert roofline.main(["--smoke", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    cases = [(tuple(r["shape"]), r["axis"], r["function"]) for r in rows]
    expected = [
        (shape, axis, func) for shape, axis in roofline.SMOKE_SHAPES for func in roofline.FUNCS
    ]
    assert cases == expected
    for r in rows:
        assert r["regime"] == _regime(r["shape"], r["axis"])
        assert (r["dtype"], r["algorithm"]) == ("float32", roofline.ALGOS[0])
    table = capsys.readouterr().out
    assert table.count("copy (D2D)") == len(roofline.SMOKE_SHAPES)


def test_target_verdict_uses_the_best_structure(capsys):
    roofline = _load_script()

    def row(algorithm, gbs, shape=(4096, 4096)):
        return dict(shape=list(shape), axis=-1, dtype="float32", function="softmax",
                    algorithm=algorithm, kernel_gbs=gbs, copy_gbs=4000.0)  # fmt: skip

    roofline._report_target([row("online", 3000.0), row("two-pass", 3600.0)])
    assert "(two-pass) at 90% of the copy bandwidth; goal >= 85%: met" in capsys.readouterr().out
    roofline._report_target([row("online", 3000.0), row("online", 3900.0, shape=(8192, 8192))])
    assert "at 75% of the copy bandwidth; goal >= 85%: not met" in capsys.readouterr().out
    roofline._report_target([row("online", 3900.0, shape=(8192, 8192))])
    assert "target" not in capsys.readouterr().out
