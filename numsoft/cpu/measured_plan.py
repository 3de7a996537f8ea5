"""The measured plan: pass structures that ``python -m numsoft tune`` timed on this
machine, read by ``auto`` in place of its built-in rule.

Like FFTW's *wisdom*, the plan is a small JSON file of winners, one per case class
(function × dtype × where the data sits × row length), kept per user beside Numba's
user-wide kernel cache (``plan_path``). It is keyed by the machine it was measured on
(``machine_key``: CPU model and features, CPU count, Numba's thread count, cache sizes,
numsoft and Numba versions): on any other machine, or when it is damaged, it is ignored
with one ``PlanWarning`` and the built-in rule applies. ``NUMSOFT_PLAN=0`` ignores it
silently.

The classes (``case_class``) are what the built-in rule distinguishes:

- where the data sits: ``"L2"`` (input and output fit the L2), ``"LLC"`` (they fit the
  last-level cache), ``"memory"`` (beyond it);
- row length: ``"tiny"`` (≤ 48: rows that run in row tiles or as vector lanes, not
  one by one), ``"short"`` (≤ 256), ``"medium"`` (≤ 16384), ``"long"`` (longer); for a
  middle axis (the normalized axis is not the last one) ``"axis0-short"`` (≤ 256, the
  tiny ones too), ``"axis0-medium"`` and ``"axis0-long"``;
- the function: ``softmax`` (an exponentiating output pass), ``log_softmax`` (a
  non-exponentiating one; the variants too) or ``logsumexp`` (no output pass).

Beside the winners, the plan may hold measured ``limits`` (``LIMITS``): up to how many
elements a call stays on one thread, from what length one row is split across the
threads, and up to what length rows run in row tiles. Reading the plan sets them in
``limits``, where the drivers read them; those missing keep their built-in values.
"""

from __future__ import annotations

import json
import os
import pathlib
import warnings

from .._version import __version__
from ..vocabulary import ALGORITHM_NAMES
from . import limits as limits_module
from . import machine

#: Format version of the file: a different one is ignored as stale.
FORMAT = 1

#: Row lengths up to which a row is tiny, short, medium (``case_class``). Rows up to
#: ``TINY_MAX`` run in row tiles or as the lanes of a vector (``rows.LANE_TILE_MAX_N``),
#: other paths than a row at a time: timed on rows of 64, a plan's "short" winner was
#: no guide to them.
TINY_MAX, SHORT_MAX, MEDIUM_MAX = 48, 256, 16384

#: The limits a plan may set (``limits.BUILTIN``).
LIMITS = tuple(limits_module.BUILTIN)


class PlanWarning(UserWarning):
    """The measured plan file is ignored (another machine, damaged, stale)."""


def plan_path() -> pathlib.Path:
    """Where the plan is kept: ``$NUMSOFT_PLAN_FILE``; else ``numsoft/plan.json`` under
    ``$NUMBA_CACHE_DIR`` when set; else in the user's cache directory, beside Numba's
    user-wide cache (``~/.cache/numsoft/plan.json`` on Linux)."""
    if path := os.environ.get("NUMSOFT_PLAN_FILE"):
        return pathlib.Path(path)
    if cache := os.environ.get("NUMBA_CACHE_DIR"):
        return pathlib.Path(cache) / "numsoft" / "plan.json"
    from numba.misc.appdirs import AppDirs

    return pathlib.Path(AppDirs(appname="numsoft", appauthor=False).user_cache_dir) / "plan.json"


def machine_key() -> dict:
    """What a plan's measurements depend on; a plan applies only where all of it is equal."""
    import numba
    from llvmlite import binding as llvm

    return {
        "cpu": numba.config.CPU_NAME or llvm.get_host_cpu_name(),
        "features": " ".join(sorted(machine.target_features())),
        "cpus": os.cpu_count(),
        "threads": numba.config.NUMBA_NUM_THREADS,
        "l1d": machine.data_cache_bytes(1),
        "l2": machine.data_cache_bytes(2),
        "last_level": machine.last_level_cache_bytes(),
        "numsoft": __version__,
        "numba": numba.__version__,
    }


def kind_of(exp_output: bool, reduction: bool) -> str:
    """The function class of a call (``choose_algorithm``'s flags)."""
    return "logsumexp" if reduction else "softmax" if exp_output else "log_softmax"


def case_class(
    kind: str, itemsize: int, n: int, nbytes: int, columns: bool = False
) -> tuple[str, str, str, str]:
    """The class of a call: ``("softmax", "float32", "L2", "short")``; in the file, its
    words joined by spaces. ``columns``: a middle axis (``axis=0``), whose length class
    is prefixed ``"axis0-"``."""
    place = (
        "L2"
        if 2 * nbytes <= machine.data_cache_bytes(2)
        else "LLC"
        if 2 * nbytes <= machine.last_level_cache_bytes()
        else "memory"
    )
    row = "short" if n <= SHORT_MAX else "medium" if n <= MEDIUM_MAX else "long"
    if columns:
        row = f"axis0-{row}"
    elif n <= TINY_MAX:
        row = "tiny"
    return kind, "float64" if itemsize >= 8 else "float32", place, row


def write(
    path: pathlib.Path, winners: dict[str, str], measured: dict, limits: dict | None = None
) -> None:
    """Save ``winners`` (class name → algorithm name) with this machine's key and the
    measurements behind them (``measured``: class name → {algorithm: seconds}), and the
    measured ``limits`` (name in ``LIMITS`` → elements), if any."""
    data = {
        "format": FORMAT,
        "machine": machine_key(),
        "winners": dict(sorted(winners.items())),
        "seconds": {k: measured[k] for k in sorted(measured)},
    }
    if limits:
        data["limits"] = dict(sorted(limits.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)  # atomic: a reader never sees half a file
    reset()


def read_plan(path: pathlib.Path) -> dict | None:
    """The plan at ``path`` when it is well formed and this machine's, else None (no
    file; one ``PlanWarning`` when it is ignored)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, this numsoft reads {FORMAT}")
        for name in data["winners"].values():
            ALGORITHM_NAMES.index(name)
        for name, value in data.get("limits", {}).items():
            if name not in LIMITS or type(value) is not int or value < 0:
                raise ValueError(f"limit {name!r}: {value!r}")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        _warn(
            f"numsoft: ignoring the damaged plan {path} ({exc}); "
            f"`python -m numsoft tune` rewrites it"
        )
        return None
    if data.get("machine") != machine_key():
        _warn(
            f"numsoft: ignoring the plan {path}: it was measured on another machine or "
            f"version ({_difference(data.get('machine'))}); `python -m numsoft tune` "
            f"measures this one"
        )
        return None
    return data


def _read() -> dict[tuple, int] | None:
    """The winners as class (``case_class``) → algorithm code, or None (no file, or
    ignored); sets the limits the calls use (the plan's, else the built-in ones)."""
    data = None if os.environ.get("NUMSOFT_PLAN") == "0" else read_plan(plan_path())
    use_limits({**builtin_limits(), **({} if data is None else data.get("limits", {}))})
    if data is None:
        return None
    return {tuple(k.split()): ALGORITHM_NAMES.index(v) for k, v in data["winners"].items()}


def builtin_limits() -> dict[str, int]:
    """The built-in value of each of ``LIMITS``."""
    return dict(limits_module.BUILTIN)


def limits_in_use() -> dict[str, int]:
    """The limits the calls use now (the plan's or the built-in ones)."""
    read_limits()
    return limits_module.in_use()


def use_limits(limits: dict[str, int]) -> None:
    """Make the calls use ``limits`` (a value for each of ``LIMITS``); the choices
    cached under the limits in use are forgotten (``limits.use``)."""
    limits_module.use(limits)


def _difference(theirs) -> str:
    ours = machine_key()
    if not isinstance(theirs, dict):
        return "no machine key"
    names = [k for k in ours if theirs.get(k) != ours[k]]
    return ", ".join(names) + " differ"


def _warn(message: str) -> None:
    warnings.warn(message, PlanWarning, stacklevel=4)


_UNREAD = object()
_winners = _UNREAD


def winners() -> dict[tuple, int] | None:
    """This machine's measured winners (read once per process), or None."""
    global _winners
    if _winners is _UNREAD:
        _winners = _read()
    return _winners


def read_limits() -> None:
    """Set the limits in use (``limits``) from the plan, unless they are set: the first
    core call of a process comes here (``threads.core_threads_for``)."""
    global _winners
    if not limits_module.is_read():
        _winners = _read()


def reset() -> None:
    """Forget what was read, and the default calls' plans made from it: the next call
    reads the file again."""
    global _winners
    _winners = _UNREAD
    limits_module.forget()


def status() -> str:
    """One line for ``python -m numsoft info``."""
    plan = winners()
    builtin = builtin_limits()
    changed = ", ".join(f"{k} {v}" for k, v in limits_in_use().items() if builtin[k] != v)
    if plan or changed:
        classes = f"{len(plan or {})} classes" + (f"; {changed}" if changed else "")
        return f"measured on this machine ({classes}; {plan_path()})"
    off = os.environ.get("NUMSOFT_PLAN") == "0"
    reason = "NUMSOFT_PLAN=0" if off else "no plan for this machine"
    return f"built-in rule ({reason}; `python -m numsoft tune` measures one)"
