"""``python -m numsoft tune``: time the pass structures on this machine and keep the
winners for ``algorithm="auto"`` (``numsoft.cpu.measured_plan``).

The default set is every class the built-in rule tells apart along a row: softmax,
log_softmax and logsumexp × float32 and float64 × where the data sits (the L2, the
last-level cache, memory) × row length (short, medium, long; and ``axis=0`` of a
short and a medium length). Each class is timed on
one representative array (``cases``), through the public functions as a user calls
them (a new result each call), with the four pass structures in alternating rounds;
each keeps its best time. ``np.copyto`` of the same array is timed beside them: the
``÷ copy`` column is the time over that of moving the bytes once.

The plan keeps the fastest unless the built-in rule's pick is within ``MARGIN`` (3 %) of
it. ``tune --check`` measures the same and prints, for each case, the built-in rule's pick,
the measured plan's (where there is one), the measured best and the loss of each
against it, without writing anything.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .cpu import auto, measured_plan
from .cpu.machine import data_cache_bytes, last_level_cache_bytes
from .vocabulary import ALGORITHM_NAMES

#: The pass structures timed.
CANDIDATES = tuple(ALGORITHM_NAMES)

KINDS = ("softmax", "log_softmax", "logsumexp")
ROW_LENGTHS = {"short": 64, "medium": 4096}  # "long": one row of the whole array
#: The largest array the "memory" class allocates (input; the result is as large).
MEMORY_MAX_BYTES = 1 << 30
#: A measured winner replaces the built-in rule's pick only when it is faster by more
#: than this: closer, the two are within one run's noise (a long row beyond the cache
#: moved 10 % between two runs here), and the rule's pick is kept.
MARGIN = 0.03


@dataclass(frozen=True)
class Case:
    kind: str
    dtype: str
    place: str
    row: str
    shape: tuple[int, int]

    @property
    def axis(self) -> int:
        return 0 if self.row.startswith("axis0") else -1

    @property
    def n(self) -> int:
        return self.shape[self.axis]

    @property
    def rows(self) -> int:
        """Rows normalized (the columns of an ``axis=0`` case)."""
        return self.shape[1] if self.axis == 0 else self.shape[0]

    @property
    def name(self) -> str:
        return " ".join((self.kind, self.dtype, self.place, self.row))

    @property
    def flags(self) -> dict:
        return {
            "exp_output": self.kind == "softmax",
            "reduction": self.kind == "logsumexp",
            "columns": self.axis == 0,
        }


def _place_bytes() -> dict[str, int]:
    """Input bytes of each place's representative: a quarter of the L2 and of the
    last-level cache (input and result together fit with room), four last-level caches
    (at most ``MEMORY_MAX_BYTES``)."""
    llc = last_level_cache_bytes()
    return {
        "L2": data_cache_bytes(2) // 4,
        "LLC": llc // 4,
        "memory": min(4 * llc, MEMORY_MAX_BYTES),
    }


def cases(only: str = "") -> list[Case]:
    """The default set (the classes whose name contains ``only``). A class this machine's
    caches leave no representative for (a long row that does not fit its L2) is left
    out."""
    found = []
    for place, nbytes in _place_bytes().items():
        for dtype in ("float32", "float64"):
            elements = nbytes // np.dtype(dtype).itemsize
            for row in ("short", "medium", "long", "axis0-short", "axis0-medium"):
                n = ROW_LENGTHS.get(row.removeprefix("axis0-"), elements)
                shape = (max(elements // n, 1), n)
                if row.startswith("axis0"):
                    shape = shape[::-1]
                for kind in KINDS:
                    case = Case(kind, dtype, place, row, shape)
                    if only in case.name and " ".join(_class_of(case)) == case.name:
                        found.append(case)
    return found


def _class_of(case: Case) -> tuple[str, ...]:
    itemsize = np.dtype(case.dtype).itemsize
    nbytes = case.shape[0] * case.shape[1] * itemsize
    return measured_plan.case_class(case.kind, itemsize, case.n, nbytes, case.axis == 0)


def _call(case: Case, x: np.ndarray, algorithm: str):
    import numsoft

    function = getattr(numsoft, case.kind)
    return lambda: function(x, axis=case.axis, algorithm=algorithm)


def _best(fn, min_seconds: float) -> float:
    """The best of at least two calls of ``fn`` lasting ``min_seconds`` together."""
    best, spent, calls = float("inf"), 0.0, 0
    while calls < 2 or spent < min_seconds:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, spent, calls = min(best, dt), spent + dt, calls + 1
    return best


def measure(case: Case, rounds: int) -> tuple[dict[str, float], float]:
    """({algorithm: best seconds}, copy seconds) for ``case``, in ``rounds`` alternating
    rounds (the order rotates each round)."""
    x = np.random.default_rng(0).standard_normal(case.shape).astype(case.dtype)
    copy_into = np.empty_like(x)
    calls = {a: _call(case, x, a) for a in CANDIDATES}
    calls["copy"] = lambda: np.copyto(copy_into, x)
    for fn in calls.values():  # compile, and fault the pages in
        fn()
    best = dict.fromkeys(calls, float("inf"))
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            best[name] = min(best[name], _best(calls[name], 0.005))
    copy = best.pop("copy")
    return best, copy


def builtin_pick(case: Case) -> str:
    itemsize = np.dtype(case.dtype).itemsize
    return ALGORITHM_NAMES[auto.builtin_algorithm(case.n, itemsize, case.rows, **case.flags)]


def plan_pick(case: Case) -> str | None:
    code = (measured_plan.winners() or {}).get(_class_of(case))
    return None if code is None else ALGORITHM_NAMES[code]


def plan_choice(case: Case, times: dict[str, float]) -> str:
    """The pass structure the plan keeps for ``case``: the fastest, unless the built-in
    rule's pick is within ``MARGIN`` of it."""
    best, rule = min(times, key=times.get), builtin_pick(case)
    return rule if times[rule] <= (1 + MARGIN) * times[best] else best


def run(check: bool = False, only: str = "", rounds: int = 5, out=print) -> int:
    """Measure the default set (``only``: its classes containing that text); write the
    plan unless ``check``; print one line per case. Returns the exit status."""
    from tqdm import tqdm

    chosen = cases(only)
    if not chosen:
        out(f"tune: no case of the default set matches {only!r}")
        return 2
    plan = None if not check else measured_plan.winners()
    start = time.perf_counter()
    results = {}
    for case in tqdm(chosen, desc="tune", unit="case", leave=False):
        results[case] = measure(case, rounds)
    seconds = time.perf_counter() - start
    header = (
        f"{'case':34s} {'shape':>16s} {'best':>18s} {'÷ copy':>7s} {'built-in':>18s} {'loss':>6s}"
    )
    if plan:
        header += f" {'measured plan':>18s} {'loss':>6s}"
    out(header)
    worst = 0.0
    for case, (times, copy) in results.items():
        fastest = min(times, key=times.get)
        rule = builtin_pick(case)
        loss = times[rule] / times[fastest] - 1
        worst = max(worst, loss)
        line = (
            f"{case.name:34s} {str(case.shape):>16s} {fastest:>18s} "
            f"{times[fastest] / copy:7.2f} {rule:>18s} {100 * loss:5.1f}%"
        )
        if plan:
            picked = plan_pick(case)
            if picked is None:
                line += f" {'(not measured)':>18s} {'':>6s}"
            else:
                line += f" {picked:>18s} {100 * (times[picked] / times[fastest] - 1):5.1f}%"
        out(line)
    worst_text = f"the built-in rule's worst loss {100 * worst:.1f}%"
    out(f"{len(results)} cases in {seconds:.0f} s; {worst_text}")
    if not check:
        winners = {c.name: plan_choice(c, t) for c, (t, _) in results.items()}
        measured = {c.name: {**t, "copy": copy} for c, (t, copy) in results.items()}
        if only:  # a partial run adds to the plan already measured here
            winners, measured = _merged(winners, measured)
        path = measured_plan.plan_path()
        measured_plan.write(path, winners, measured)
        out(f"plan written: {path} (auto follows it on this machine; NUMSOFT_PLAN=0 ignores it)")
    return 0


def _merged(winners: dict, measured: dict) -> tuple[dict, dict]:
    """``winners`` and ``measured`` over those of this machine's current plan file
    (none when it is another machine's or damaged: this run's replace it, silently)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measured_plan.PlanWarning)
        data = measured_plan.read_plan(measured_plan.plan_path())
    if data is None:
        return winners, measured
    return {**data["winners"], **winners}, {**data.get("seconds", {}), **measured}
