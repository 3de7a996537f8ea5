import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # the test oracle module

# A plan measured on this machine (``python -m numsoft tune``) changes what "auto"
# picks; the tests check the built-in rule unless they write a plan of their own
# (tests/test_tune.py).
os.environ.setdefault("NUMSOFT_PLAN", "0")

# The CUDA backend's tests run in their own pytest process, under the CUDA simulator
# (NUMBA_ENABLE_CUDASIM=1) or on a GPU (NUMSOFT_TEST_CUDA=1); see tests/cuda/conftest.py.
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and os.environ.get("NUMSOFT_TEST_CUDA") != "1":
    collect_ignore = ["cuda"]


def pytest_sessionfinish(session):
    """Drop Hypothesis's garbage-collector callback once the tests are over.

    When a test worker takes more than 5 s to wind down, execnet (pytest-xdist's
    transport) sends the worker a SIGINT; landing inside that callback, during a
    collection, it was printed as an unraisable ``KeyboardInterrupt`` at the end of the
    run. The callback only times collections for Hypothesis's deadlines.
    """
    import gc

    gc.callbacks[:] = [
        cb for cb in gc.callbacks if not getattr(cb, "__module__", "").startswith("hypothesis.")
    ]


def pytest_terminal_summary(terminalreporter):
    """Say how many tests the missing optional libraries skipped, and how to get them.

    A module that needs torch or entmax skips itself whole when the library is missing
    (``pytest.importorskip``); pytest's own summary then lists one line per module.
    """
    missing = {}
    for report in terminalreporter.stats.get("skipped", []):
        if not isinstance(report.longrepr, tuple):
            continue
        path, _, reason = report.longrepr
        for library in ("torch", "entmax"):
            if f"could not import '{library}'" in reason:
                missing.setdefault(library, set()).add(os.path.basename(path))
    for library, modules in missing.items():
        terminalreporter.write_line(
            f"{library} is not installed: {len(modules)} test modules skipped whole "
            f"({', '.join(sorted(modules))}); bash tests/install_torch_cpu.sh installs "
            "PyTorch's CPU build and entmax"
        )
