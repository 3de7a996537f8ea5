"""``algorithm="auto"``: the rule of ``numsoft.cpu.auto`` and the machine facts it reads."""

import numpy as np
import pytest

from numsoft.cpu import auto, machine
from numsoft.cpu.auto import builtin_algorithm
from numsoft.vocabulary import ONLINE, THREE_PASS_RELOAD, THREE_PASS_STORE, TWO_PASS

MIB = 1 << 20


@pytest.fixture
def l3_32mib(monkeypatch):
    monkeypatch.setattr(auto, "last_level_cache_bytes", lambda: 32 * MIB)
    monkeypatch.setattr(auto, "data_cache_bytes", {1: 32 << 10, 2: 1 * MIB}.get)


@pytest.mark.parametrize(("threads", "lanes"), [(1, 16), (2, 8), (2, 16), (8, 16)])
def test_in_cache_is_store_whatever_the_machine(l3_32mib, threads, lanes):
    # 16 MiB of float32: half the last-level cache, the output takes the other half
    assert builtin_algorithm(4096, 4, 1024, threads, lanes) == THREE_PASS_STORE


@pytest.mark.parametrize(
    ("threads", "lanes", "expected"),
    [
        (1, 16, TWO_PASS),  # one AVX-512 core: two-pass's chained (M, E) (measured, Zen 4)
        (1, 8, THREE_PASS_STORE),  # one AVX2 core: exp-bound
        (2, 8, THREE_PASS_STORE),  # two AVX2 cores: exp-bound (measured, auto.py)
        (2, 16, TWO_PASS),  # two AVX-512 cores: memory-bound (measured on Zen 5)
        (4, 8, TWO_PASS),  # as many lanes as two AVX-512 cores
    ],
)
def test_out_of_cache_depends_on_the_vector_width_and_threads(l3_32mib, threads, lanes, expected):
    # rows of 512 KiB of float32: the input and output rows overflow half a 1 MiB L2
    assert builtin_algorithm(131072, 4, 1024, threads, lanes, exp_output=True) == expected


@pytest.mark.parametrize(("threads", "lanes"), [(1, 16), (2, 16), (8, 16)])
def test_out_of_cache_on_wide_vectors_rows_in_l2_are_store(l3_32mib, threads, lanes):
    # Zen 4: three-pass-store ahead of two-pass where its re-reads hit L2: a float32 row
    # and its output in half of it, a float64 one in all of it (auto.py's tables)
    # float32 softmax (its output pass exponentiates): a row and its output in half L2
    assert builtin_algorithm(65536, 4, 1024, threads, lanes, exp_output=True) == THREE_PASS_STORE
    assert builtin_algorithm(65537, 4, 1024, threads, lanes, exp_output=True) == TWO_PASS
    # float32 log_softmax, logsumexp: in L1
    assert builtin_algorithm(4096, 4, 4096, threads, lanes) == THREE_PASS_STORE  # 2×16 KiB
    assert builtin_algorithm(4097, 4, 4096, threads, lanes) == TWO_PASS
    assert builtin_algorithm(65536, 8, 1024, threads, lanes) == THREE_PASS_STORE  # 2×512 KiB
    assert builtin_algorithm(65537, 8, 1024, threads, lanes) == ONLINE  # float64 beyond L2


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_beyond_l2_on_wide_vectors_float64_rows_online_else_two_pass(l3_32mib, threads):
    # Zen 5 tune tables (numsoft/cpu/auto.py): online's statistics pass costs less than
    # two-pass's (M, E) update for float64 rows; two-pass for float32 rows, for a row
    # split across threads and for logsumexp of long rows (one read per element)
    n = 1 << 20
    for exp_output in (True, False):
        assert builtin_algorithm(n, 4, 64, threads, 16, exp_output=exp_output) == TWO_PASS
        assert builtin_algorithm(n, 8, 64, threads, 16, exp_output=exp_output) == ONLINE
        one_row = TWO_PASS if threads > 1 else ONLINE  # one thread: the row is not split
        assert builtin_algorithm(1 << 23, 8, 1, threads, 16, exp_output=exp_output) == one_row
        assert builtin_algorithm(1 << 24, 4, 1, threads, 16, exp_output=exp_output) == TWO_PASS
    for itemsize in (4, 8):
        assert builtin_algorithm(n, itemsize, 64, threads, 16, reduction=True) == TWO_PASS
        store = builtin_algorithm(4095, itemsize, 4096, threads, 16, reduction=True)
        assert store == THREE_PASS_STORE  # a short row: store's re-read hits L1
    # rows of 4096: two-pass for float32; a float64 row's re-read hits the L2 (Zen 4
    # tables: two-pass 7-12 % behind store and online, Zen 5 store 8 % behind two-pass)
    assert builtin_algorithm(4096, 4, 4096, threads, 16, reduction=True) == TWO_PASS
    assert builtin_algorithm(4096, 8, 4096, threads, 16, reduction=True) == THREE_PASS_STORE


def test_in_cache_a_split_row_without_an_exp_output_is_online(l3_32mib, monkeypatch):
    # two parallel phases against store's three; softmax keeps store's one exponential
    from numsoft.cpu import limits

    monkeypatch.setattr(limits, "split_min_row", 1 << 15)
    for options in ({}, {"reduction": True}):
        assert builtin_algorithm(1 << 15, 4, 1, 2, 16, **options) == ONLINE
        assert builtin_algorithm(1 << 15, 4, 1, 1, 16, **options) == THREE_PASS_STORE
        assert builtin_algorithm((1 << 15) - 1, 4, 1, 2, 16, **options) == THREE_PASS_STORE
    # beyond the L2, log_softmax's store re-reads the row for less than online's second
    # pass costs (tune tables, one row in the LLC: online 2-10 % behind store on every
    # CPU); logsumexp has no output pass for store to save (online 4-5 % behind on Zen
    # 4, store 6-10 % behind on Zen 5)
    from numsoft.cpu import auto

    monkeypatch.setattr(auto, "data_cache_bytes", {1: 32 << 10, 2: 1 << 20}.__getitem__)
    assert builtin_algorithm(1 << 21, 4, 1, 2, 16) == THREE_PASS_STORE
    assert builtin_algorithm(1 << 21, 4, 1, 2, 16, reduction=True) == ONLINE
    assert builtin_algorithm(1 << 15, 4, 1, 2, 16, exp_output=True) == THREE_PASS_STORE


def test_a_short_row_in_cache_never_asks_the_thread_count(l3_32mib, monkeypatch):
    # a small call never touches the thread pool
    def no(*args):
        raise AssertionError("usable_threads asked")

    monkeypatch.setattr(auto, "usable_threads", no)
    from numsoft.cpu import threads

    monkeypatch.setattr(threads, "usable_threads", no)
    assert builtin_algorithm(100, 4, 1) == THREE_PASS_STORE


def test_in_cache_column_blocks_reload_where_store_saves_nothing(l3_32mib):
    # log_softmax: no exponential in the output pass for store to save
    for itemsize in (4, 8):
        for columns in (100, 1024):
            assert builtin_algorithm(64, itemsize, columns, 2, 16, columns=True) == (
                THREE_PASS_RELOAD
            )
            lse = builtin_algorithm(64, itemsize, columns, 2, 16, columns=True, reduction=True)
            assert lse == THREE_PASS_STORE

    # softmax: store's exponential is worth its re-read within one block (512 columns),
    # for float64 and for float32 in many blocks (MANY_COLUMN_BLOCKS, every thread has
    # many); float32 in a few blocks re-reads runs an array row apart
    def softmax(itemsize, columns):
        return builtin_algorithm(64, itemsize, columns, 2, 16, columns=True, exp_output=True)

    assert softmax(4, 512) == THREE_PASS_STORE
    assert softmax(4, 513) == softmax(4, 16 * 512 - 1) == THREE_PASS_RELOAD
    assert softmax(4, 16 * 512) == softmax(4, 32768) == THREE_PASS_STORE
    assert softmax(8, 100) == softmax(8, 1024) == THREE_PASS_STORE


@pytest.mark.parametrize("options", [{}, {"exp_output": True}, {"reduction": True}])
def test_in_cache_narrow_columns_on_wide_vectors_are_two_pass(l3_32mib, options):
    # 128 bytes of columns: a vector or two per block row, two sweeps instead of three
    assert builtin_algorithm(4096, 4, 32, 2, 16, columns=True, **options) == TWO_PASS
    assert builtin_algorithm(4096, 8, 16, 2, 16, columns=True, **options) == TWO_PASS
    assert builtin_algorithm(4096, 4, 33, 2, 16, columns=True, **options) != TWO_PASS


@pytest.mark.parametrize("lanes", [4, 8])
def test_in_cache_narrow_columns_on_narrower_vectors_are_store_or_online(l3_32mib, lanes):
    # two-pass's (M, E) update costs twice the instructions: softmax keeps its one
    # exponential per element (store), the others take online's lighter update
    def narrow(itemsize, columns, **options):
        return builtin_algorithm(4096, itemsize, columns, 2, lanes, columns=True, **options)

    for itemsize, columns in ((4, 32), (8, 16)):
        assert narrow(itemsize, columns, exp_output=True) == THREE_PASS_STORE
        assert narrow(itemsize, columns) == ONLINE  # log_softmax
        assert narrow(itemsize, columns, reduction=True) == ONLINE
    # wider columns take the column blocks, whatever the vector width
    assert narrow(4, 33) == THREE_PASS_RELOAD


def test_out_of_cache_logsumexp_on_narrower_vectors_is_online_for_long_rows(l3_32mib):
    # one read per element, without two-pass's exp-bound (M, E) update
    def lse(n, threads=2, lanes=8, itemsize=4):
        rows = (256 * MIB) // (itemsize * n)
        return builtin_algorithm(n, itemsize, rows, threads, lanes, reduction=True)

    assert lse(2048) == lse(1024, itemsize=8) == ONLINE  # 8 KiB rows
    assert lse(2047) == lse(1023, itemsize=8) == THREE_PASS_STORE
    assert lse(1 << 16, lanes=4) == ONLINE
    assert lse(1 << 16, threads=4) == TWO_PASS  # as many lanes as two AVX-512 cores
    assert lse(1 << 16, lanes=16) == TWO_PASS


def test_the_row_thresholds_are_the_machines(l3_32mib, monkeypatch):
    monkeypatch.setattr(auto, "data_cache_bytes", {1: 64 << 10, 2: 2 * MIB}.get)
    assert builtin_algorithm(131072, 4, 128, 2, 16, exp_output=True) == THREE_PASS_STORE
    assert builtin_algorithm(131072, 8, 64, 2, 16) == THREE_PASS_STORE
    monkeypatch.setattr(auto, "data_cache_bytes", {1: 48 << 10, 2: 1 * MIB}.get)
    assert builtin_algorithm(131072, 4, 128, 2, 16, exp_output=True) == TWO_PASS
    assert builtin_algorithm(131072, 8, 64, 2, 16) == ONLINE


def test_the_cache_threshold_is_the_machines(monkeypatch):
    monkeypatch.setattr(auto, "last_level_cache_bytes", lambda: 2 * MIB)
    monkeypatch.setattr(auto, "data_cache_bytes", {1: 32 << 10, 2: 1 * MIB}.get)
    assert builtin_algorithm(16384, 4, 16, 2, 16) == THREE_PASS_STORE  # 1 MiB
    assert builtin_algorithm(16384, 4, 32, 2, 16) == TWO_PASS  # 2 MiB


def test_the_caches_are_read_from_sys(monkeypatch, tmp_path):
    caches = [("Data", 1, "48K"), ("Instruction", 1, "32K"), ("Unified", 2, "2048K"),
              ("Unified", 3, "36M")]  # fmt: skip
    for index, (kind, level, size) in enumerate(caches):
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "type").write_text(kind + "\n")
        (d / "level").write_text(f"{level}\n")
        (d / "size").write_text(size + "\n")
    monkeypatch.setattr(machine, "_CACHE_DIR", tmp_path)
    readers = (machine.last_level_cache_bytes, machine.data_cache_bytes)
    for reader in readers:
        reader.cache_clear()
    try:
        assert machine.last_level_cache_bytes() == 36 * MIB
        assert machine.data_cache_bytes(1) == 48 << 10
        assert machine.data_cache_bytes(2) == 2 * MIB
        monkeypatch.setattr(machine, "_CACHE_DIR", tmp_path / "absent")
        for reader in readers:
            reader.cache_clear()
        assert machine.last_level_cache_bytes() == machine.DEFAULT_LAST_LEVEL_CACHE
        assert machine.data_cache_bytes(1) == machine.DEFAULT_DATA_CACHE[1]
    finally:
        for reader in readers:
            reader.cache_clear()


def test_a_middle_axis_out_of_cache_is_online_in_chunks_of_rows(l3_32mib):
    # column_chunks: 2 reads, 1 write, every one contiguous (docs/performance.md)
    from numsoft.vocabulary import ONLINE

    in_cache = builtin_algorithm(4096, 4, 1024, 2, 16, columns=True)  # the column blocks
    assert in_cache == THREE_PASS_RELOAD
    for threads, lanes in [(1, 8), (2, 16)]:
        assert builtin_algorithm(4096, 4, 4096, threads, lanes, columns=True) == ONLINE


def test_outputs_stream_beyond_the_cache_unless_new(l3_32mib):
    # an output and its input that fit the cache together stay in it for the caller
    assert not auto.streams_output(16 * MIB, fresh=False)
    assert auto.streams_output(16 * MIB + 4, fresh=False)
    # a new array's pages are zeroed through the cache by the OS: ordinary stores
    assert not auto.streams_output(256 * MIB, fresh=True)


def test_softmax_and_log_softmax_choose_by_their_output_pass(l3_32mib, monkeypatch):
    # the default-call plan asks with exp_output = not log_output
    from numsoft.cpu import rows

    monkeypatch.setattr(auto, "float32_lanes", lambda: 16)
    rows._default_plans.clear()
    try:
        f32 = np.dtype(np.float32)
        plans = [rows.default_softmax_plan(f32, log, (1024, 16384, 1)) for log in (False, True)]
        names = [plan[0].py_func.__name__ for plan in plans]
    finally:
        rows._default_plans.clear()
    assert f"ALGORITHM_{THREE_PASS_STORE}_" in names[0]
    assert f"ALGORITHM_{TWO_PASS}_" in names[1]


def test_a_middle_axis_too_short_for_a_chunk_per_thread_takes_the_column_blocks():
    # column_chunks cuts the axis into chunks of rows, a task each: 64 rows are one
    # chunk, one thread's work, and the column blocks beat it
    inner = 1 << 19  # 64 x 2^19 float32: 128 MiB, beyond any cache here
    assert builtin_algorithm(64, 4, inner, 2, 16, columns=True) == THREE_PASS_RELOAD
    assert builtin_algorithm(64, 8, inner, 2, 16, columns=True, exp_output=True) == (
        THREE_PASS_STORE
    )
    assert builtin_algorithm(64, 4, inner, 1, 16, columns=True) == ONLINE
    assert builtin_algorithm(4096, 4, inner // 64, 2, 16, columns=True) == ONLINE
