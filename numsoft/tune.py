"""``python -m numsoft tune``: time the pass structures on this machine and keep the
winners for ``algorithm="auto"`` (``numsoft.cpu.measured_plan``).

The default set is every class the built-in rule tells apart along a row: softmax,
log_softmax and logsumexp × float32 and float64 × where the data sits (the L2, the
last-level cache, memory) × row length (tiny, short, medium, long; and ``axis=0`` of a
short and a medium length). Each class is timed on
one representative array (``cases``), through the public functions as a user calls
them (a new result each call), with the four pass structures in alternating rounds;
each keeps its best time. ``np.copyto`` of the same array is timed beside them: the
``÷ copy`` column is the time over that of moving the bytes once.

The plan keeps the fastest unless the built-in rule's pick is within ``MARGIN`` (3 %) of
it. ``tune --check`` measures the same and prints, for each case, the built-in rule's pick,
the measured plan's (where there is one), the measured best and the loss of each
against it, without writing anything.

The limits (``Limit``) are timed first: up to how many elements a call stays on one
thread, from what length one row is split across the threads, up to what length rows
run in row tiles. Each is timed on a ladder of sizes, both ways at each size, in rounds
that cross the whole ladder. The limit is the split of the ladder that loses least;
a size whose rounds do not agree on a winner counts as a tie, and among splits that
lose nearly as little as the best (``LIMIT_TIES``) the one nearest the built-in value
is kept. The classes are then timed under the limits measured, as the plan will run
them (a check: under the limits in use, the plan's where there is one).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .cpu import auto, measured_plan, threads
from .cpu import limits as limits_module
from .cpu.machine import data_cache_bytes, last_level_cache_bytes, other_running_threads
from .vocabulary import ALGORITHM_NAMES

#: The pass structures timed.
CANDIDATES = tuple(ALGORITHM_NAMES)

KINDS = ("softmax", "log_softmax", "logsumexp")
ROW_LENGTHS = {"tiny": 32, "short": 64, "medium": 4096}  # "long": one row of the whole array
#: The largest array the "memory" class allocates (input; the result is as large).
MEMORY_MAX_BYTES = 1 << 30
#: A measured winner replaces the built-in rule's pick only when it is faster by more
#: than this: closer, the two are within one run's noise (a long row beyond the cache
#: moved 10 % between two runs here), and the rule's pick is kept.
MARGIN = 0.03
#: Splits of a limit's ladder whose losses differ by less than this are ties, which the
#: built-in value wins (``Limit.chosen``): a size near the limit, where the two ways are
#: a few per cent apart, was decided one way or the other from run to run, and moved
#: the limit with it. One row of 65536 float32 (2-core AMD EPYC Zen 4): split ÷ not
#: 0.99-1.12 in nine ``tune --check --only limit`` runs, which gave 65536 or 131072.
LIMIT_TIES = 0.15


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
            for row in ("tiny", "short", "medium", "long", "axis0-short", "axis0-medium"):
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


def compile_side_by_side(chosen: list[Case]) -> float:
    """Compile (or load) the paths ``chosen`` times, in worker processes side by side
    (``warmup.run_jobs``: a job per function and dtype), so that measuring finds them in
    the cache. Returns the wall time."""
    from tqdm import tqdm

    from . import warmup

    jobs = {}
    for case in chosen:
        calls = jobs.setdefault((case.kind, case.dtype), [])
        for algorithm in CANDIDATES:
            calls.append(warmup.Case(f"{case.name}, {algorithm}", case.shape, case.axis, algorithm))
    jobs = [warmup.Job(kind, dtype, tuple(calls)) for (kind, dtype), calls in jobs.items()]
    if not jobs:
        return 0.0
    with tqdm(total=sum(len(j.cases) for j in jobs), desc="compile", leave=False) as bar:

        class Bar(warmup.Progress):
            def call(self, function, dtype, label, done):
                bar.update(done)

        return warmup.run_jobs(jobs, progress=Bar())


#: Rounds of a copy whose median spreads more than this above their best mark a busy
#: machine (``busy_signs``).
BUSY_SPREAD = 0.15

#: The spread (median ÷ best - 1) of each ``measure``'s copy rounds since ``run`` began.
_copy_spreads: list[float] = []


def busy_signs(spreads: list[float], others: list[int | None]) -> list[str]:
    """What says the machine was busy while it was timed: the copies' rounds spread more
    than ``BUSY_SPREAD`` in the median, or other processes' threads ran (in the median
    of ``others``, ``machine.other_running_threads`` samples)."""
    signs = []
    if spreads and statistics.median(spreads) > BUSY_SPREAD:
        signs.append(
            f"a copy's rounds spread {100 * statistics.median(spreads):.0f}% above their "
            f"best in the median (quiet: under {100 * BUSY_SPREAD:.0f}%)"
        )
    sampled = [n for n in others if n is not None]
    if sampled and statistics.median(sampled) >= 1:
        signs.append(f"{statistics.median(sampled):.0f} threads of other processes running")
    return signs


def _alternate(calls: dict, rounds: int, each: dict | None = None) -> dict[str, float]:
    """{name: best seconds} of ``calls`` in ``rounds`` alternating rounds (the order
    rotates each round), after one untimed call of each (compile, fault pages in).
    ``each``, where given, receives every round's time per name."""
    for fn in calls.values():
        fn()
    best = dict.fromkeys(calls, float("inf"))
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            seconds = _best(calls[name], 0.005)
            best[name] = min(best[name], seconds)
            if each is not None:
                each.setdefault(name, []).append(seconds)
    return best


def measure(case: Case, rounds: int) -> tuple[dict[str, float], float]:
    """({algorithm: best seconds}, copy seconds) for ``case``, in ``rounds`` alternating
    rounds."""
    x = np.random.default_rng(0).standard_normal(case.shape).astype(case.dtype)
    copy_into = np.empty_like(x)
    calls = {a: _call(case, x, a) for a in CANDIDATES}
    calls["copy"] = lambda: np.copyto(copy_into, x)
    each = {}
    best = _alternate(calls, rounds, each=each)
    copy = best.pop("copy")
    _copy_spreads.append(statistics.median(each["copy"]) / copy - 1)
    return best, copy


@dataclass(frozen=True)
class Limit:
    """A limit of ``measured_plan.LIMITS``, timed on ``sizes``: at each size, the calls
    of ``shapes(size)`` (``function`` along the last axis, with ``"auto"``) the way of
    the sizes below the limit (``"below"``: one thread, a row not split, row tiles) and
    the way of those beyond it (``"beyond"``). ``at_most``: the limit is the largest
    size of the "below" way (else the smallest of the "beyond" way)."""

    name: str
    sizes: tuple[int, ...]
    shapes: Callable[[int], tuple]  # size -> ((shape, dtype), ...)
    at_most: bool
    needs_threads: bool
    #: other limits held while this one is timed (the split limit is only reached by
    #: calls that do not stay on one thread)
    holding: tuple[tuple[str, int], ...] = ()
    function: str = "softmax"

    def value_for(self, size: int, way: str) -> int:
        """The limit that makes a call of ``size`` go ``way``."""
        below = way == "below"
        if self.at_most:
            return size if below else size - 1
        return size + 1 if below else size

    def chosen(self, times: dict[int, dict[str, float]]) -> int:
        """The limit from ``times`` (size → {way: seconds}): the split of the sizes into
        "below" ones and "beyond" ones that loses least in all (the sum over the sizes of
        the way's excess over the other, where it is slower by more than ``MARGIN``),
        not the first size from which "beyond" keeps winning: one size measured in a busy
        moment then moves the limit only where it outweighs all the others. A size
        counts only where its rounds agree on the winner (``_decided``), and splits
        within ``LIMIT_TIES`` of the least loss count as ties, won by the one nearest the
        built-in value (``limits.BUILTIN``)."""
        ratios = [_decided(times[s]) for s in self.sizes]

        def loss(slower: float) -> float:  # a way loses where it is slower by > MARGIN
            return slower - 1 if slower > 1 + MARGIN else 0.0

        losses = [
            sum(loss(1 / r) for r in ratios[:first])  # "below" where "beyond" wins
            + sum(loss(r) for r in ratios[first:])  # "beyond" where "below" wins
            for first in range(len(self.sizes) + 1)
        ]
        values = [self._value(first) for first in range(len(self.sizes) + 1)]
        builtin = limits_module.BUILTIN[self.name]
        tied = [i for i, loss in enumerate(losses) if loss <= min(losses) + LIMIT_TIES]
        return values[min(tied, key=lambda i: abs(math.log(values[i] / builtin)))]

    def _value(self, first: int) -> int:
        """The limit that sends ``sizes[first:]`` the "beyond" way."""
        if self.at_most:
            return self.sizes[first - 1] if first > 0 else self.sizes[0] // 2
        return self.sizes[first] if first < len(self.sizes) else 2 * self.sizes[-1]


def _decided(times: dict[str, float]) -> float:
    """beyond ÷ below at a size (``times``: {way: seconds}, and where measured the
    ``"quartiles"`` of the rounds' beyond ÷ below), or 1 where the rounds do not agree on
    a winner by more than ``MARGIN``: three quarters of them must. Near a limit the two
    ways differ by less than one round's noise (``tile_max_n`` on a 2-core Zen 4: rows
    ÷ tiles at 12 elements from 0.69 to 1.08 in four runs in one process), and a single
    median then moved the limit from run to run."""
    ratio = times["beyond"] / times["below"]
    low, high = times.get("quartiles", (ratio, ratio))
    return ratio if low > 1 + MARGIN or high < 1 / (1 + MARGIN) else 1.0


#: The limits measured: the shapes their built-in values were set from, with "auto".
LIMITS = (
    Limit(
        "serial_max_elements",  # rows of 256, float32 and float64 together, by total size
        (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144),
        lambda size: (((size // 256, 256), "float32"), ((size // 256, 256), "float64")),
        at_most=True,
        needs_threads=True,
    ),
    Limit(
        "split_min_row",  # one float32 row, by length
        (8192, 16384, 32768, 65536, 131072, 262144, 524288),
        lambda size: (((size,), "float32"),),
        at_most=False,
        needs_threads=True,
        holding=(("serial_max_elements", 0),),
    ),
    Limit(
        "tile_max_n",  # 4096 rows, float32 and float64 together, by row length
        (4, 6, 8, 10, 12, 14, 16),
        lambda size: (((4096, size), "float32"), ((4096, size), "float64")),
        at_most=True,
        needs_threads=False,
        # the kernels alone, on one thread: how fast the second thread wakes moved
        # tiles ÷ rows at a length by up to 20 % from run to run (2-core Zen 4)
        holding=(("serial_max_elements", 1 << 20),),
    ),
)


def measure_limit(
    limit: Limit, rounds: int, context: dict[str, int]
) -> dict[int, dict[str, float]]:
    """size → {"below": seconds, "beyond": seconds, "quartiles": (q1, q3) of beyond ÷
    below}, with the other limits as in ``context`` (and ``limit.holding``).

    ``2 * rounds + 1`` rounds, each over every size (in rotating order) and both ways at
    a size back to back (in alternating order); the median of each. A limit compares
    two ways that differ by a few per cent near it: one lucky round decided the best
    of each, and a busy moment that spanned all the rounds of one size decided that
    size; across the sizes it is one round of each."""
    import numsoft

    function = getattr(numsoft, limit.function)
    rng = np.random.default_rng(0)
    held = {**context, **dict(limit.holding)}
    ways, sizes = ("below", "beyond"), list(limit.sizes)
    calls = {}
    for size in sizes:
        arrays = [rng.standard_normal(shape).astype(dt) for shape, dt in limit.shapes(size)]

        def call(arrays=arrays):
            for x in arrays:
                function(x)

        calls[size] = call

    def use(size: int, way: str) -> None:
        measured_plan.use_limits({**held, limit.name: limit.value_for(size, way)})

    for size in sizes:  # compile, fault the pages in
        for way in ways:
            use(size, way)
            calls[size]()
    each = {}
    for r in range(2 * rounds + 1):
        for size in sizes[r % len(sizes) :] + sizes[: r % len(sizes)]:
            for way in ways[:: 1 - 2 * (r % 2)]:
                use(size, way)
                each.setdefault((size, way), []).append(_best(calls[size], 0.005))
    times = {}
    for size in sizes:
        below, beyond = each[size, "below"], each[size, "beyond"]
        ratios = [b / a for a, b in zip(below, beyond, strict=True)]  # round by round
        quartiles = statistics.quantiles(ratios, n=4)
        times[size] = {
            "below": statistics.median(below),
            "beyond": statistics.median(beyond),
            "quartiles": (quartiles[0], quartiles[2]),
        }
    return times


def limits_for(only: str = "") -> list[Limit]:
    """The limits measured on this machine (whose name contains ``only``): those about
    threads only where calls may use several."""
    several = threads.usable_threads() > 1
    return [
        lim for lim in LIMITS if only in f"limit {lim.name}" and (several or not lim.needs_threads)
    ]


def builtin_pick(case: Case) -> str:
    itemsize = np.dtype(case.dtype).itemsize
    return ALGORITHM_NAMES[auto.builtin_algorithm(case.n, itemsize, case.rows, **case.flags)]


def plan_pick(case: Case) -> str | None:
    code = (measured_plan.winners() or {}).get(_class_of(case))
    return None if code is None else ALGORITHM_NAMES[code]


def plan_choice(case: Case, times: dict[str, float], rule: str | None = None) -> str:
    """The pass structure the plan keeps for ``case``: the fastest, unless the built-in
    rule's pick (``rule``, by default under the limits in use) is within ``MARGIN`` of
    it."""
    best, rule = min(times, key=times.get), rule or builtin_pick(case)
    return rule if times[rule] <= (1 + MARGIN) * times[best] else best


def confirmed_choice(case: Case, pick: str, rule: str, rounds: int) -> str:
    """``pick`` (``plan_choice``'s), where it departs from the built-in rule's pick kept
    only if timing the two again, in fresh alternating rounds, confirms it. The default set is
    timed case after case, and a class timed in a busy moment can crown the wrong
    structure: on a 2-core Zen 4, one full ``tune`` measured store 31 % behind reload
    for float32 ``softmax`` in rows of 64 in the L2, where the run before had it 28 %
    ahead (every structure of that class 30-60 % slower that time but reload)."""
    if pick == rule:
        return pick
    x = np.random.default_rng(1).standard_normal(case.shape).astype(case.dtype)
    again = _alternate({a: _call(case, x, a) for a in (pick, rule)}, rounds)
    return pick if (1 + MARGIN) * again[pick] < again[rule] else rule


def run(
    check: bool = False, only: str = "", rounds: int = 5, out=print, force: bool = False
) -> int:
    """Measure the default set and the limits (``only``: those whose name contains that
    text); write the plan unless ``check``; print one line per case and per limit.
    On a machine that looked busy (``busy_signs``) say so, and keep a plan written
    before unless ``force``. Returns the exit status."""
    from tqdm import tqdm

    chosen, limits = cases(only), limits_for(only)
    if not chosen and not limits:
        out(f"tune: no case of the default set and no limit matches {only!r}")
        return 2
    plan = None if not check else measured_plan.winners()
    start = time.perf_counter()
    results, rules, picks, departed, limit_times, others = {}, {}, {}, [], {}, []
    _copy_spreads.clear()
    in_use, measured_limits = measured_plan.limits_in_use(), {}
    try:
        with tqdm(total=len(chosen) + len(limits), desc="tune", unit="case", leave=False) as bar:
            for limit in limits:  # each timed under the limits measured before it
                limit_times[limit] = measure_limit(limit, rounds, {**in_use, **measured_limits})
                measured_limits[limit.name] = limit.chosen(limit_times[limit])
                others.append(other_running_threads())
                bar.update()
            # A plan's classes are timed as the plan will run them, under its limits: a
            # row of 65536 float32 is split under the built-in split limit and not under
            # a measured 262144, and which structure wins changes with it. A check times
            # them under the limits in use.
            if not check:
                measured_plan.use_limits({**in_use, **measured_limits})
            compiling = compile_side_by_side(chosen)
            for case in chosen:
                results[case] = measure(case, rounds)
                rules[case] = builtin_pick(case)
                others.append(other_running_threads())
                bar.update()
            if not check:  # the plan's departures from the rule, timed again
                for case, (times, _) in results.items():
                    first = plan_choice(case, times, rules[case])
                    if first != rules[case]:
                        departed.append(case)
                    picks[case] = confirmed_choice(case, first, rules[case], rounds)
    finally:
        measured_plan.use_limits(in_use)
    seconds = time.perf_counter() - start
    worst = _report_cases(results, rules, plan, out) if results else 0.0
    _report_limits(limit_times, measured_limits, out)
    out(
        f"{len(results)} cases and {len(limits)} limits in {seconds:.0f} s "
        f"(compiling or loading {compiling:.0f} s); the built-in rule's worst loss "
        f"{100 * worst:.1f}%"
    )
    signs = busy_signs(_copy_spreads, others)
    if signs:
        out(f"tune: the machine looked busy ({'; '.join(signs)}): the times above may mislead")
    if not check and signs and not force and measured_plan.plan_path().exists():
        out(
            f"kept the plan measured before ({measured_plan.plan_path()}): rerun on a quiet "
            f"machine, or with --force to write this one"
        )
        return 0
    if not check:
        winners = {c.name: pick for c, pick in picks.items()}
        kept = sum(picks[c] != rules[c] for c in departed)
        out(f"the built-in rule's pick replaced in {kept} classes ({len(departed)} timed again)")
        measured = {c.name: {**t, "copy": copy} for c, (t, copy) in results.items()}
        if only:  # a partial run adds to the plan already measured here
            winners, measured, measured_limits = _merged(winners, measured, measured_limits)
        path = measured_plan.plan_path()
        measured_plan.write(path, winners, measured, measured_limits)
        out(f"plan written: {path} (auto follows it on this machine; NUMSOFT_PLAN=0 ignores it)")
    return 0


def _report_cases(results: dict, rules: dict, plan: dict | None, out) -> float:
    """Print a line per case (``rules``: the built-in rule's pick per case, under the
    limits it was timed under); returns the built-in rule's worst loss."""
    header = (
        f"{'case':34s} {'shape':>16s} {'best':>18s} {'÷ copy':>7s} {'built-in':>18s} {'loss':>6s}"
    )
    if plan:
        header += f" {'measured plan':>18s} {'loss':>6s}"
    out(header)
    worst, plan_worst = 0.0, (0.0, "")
    for case, (times, copy) in results.items():
        fastest = min(times, key=times.get)
        rule = rules[case]
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
                plan_worst = max(plan_worst, (times[picked] / times[rule] - 1, case.name))
        out(line)
    if plan:
        loss, name = plan_worst
        against = f"{100 * loss:.1f}% slower ({name})" if loss > 0 else "never slower"
        out(f"the measured plan against the built-in rule: at worst {against}")
    return worst


def _report_limits(limit_times: dict, measured: dict[str, int], out) -> None:
    """Print a line per limit: built-in and measured values, and beyond ÷ below per size."""
    builtin = measured_plan.builtin_limits()
    for limit, times in limit_times.items():
        ratios = ", ".join(f"{s}: {t['beyond'] / t['below']:.2f}" for s, t in times.items())
        out(
            f"limit {limit.name:20s} built-in {builtin[limit.name]:>7d}, "
            f"measured {measured[limit.name]:>7d} (beyond ÷ below {ratios})"
        )


def _merged(winners: dict, measured: dict, limits: dict) -> tuple[dict, dict, dict]:
    """``winners``, ``measured`` and ``limits`` over those of this machine's current plan
    file (none when it is another machine's or damaged: this run's replace it,
    silently)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measured_plan.PlanWarning)
        data = measured_plan.read_plan(measured_plan.plan_path())
    if data is None:
        return winners, measured, limits
    return (
        {**data["winners"], **winners},
        {**data.get("seconds", {}), **measured},
        {**data.get("limits", {}), **limits},
    )
