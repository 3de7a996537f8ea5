"""``algorithm="auto"``: the rule of ``numsoft.cpu.auto`` and the machine facts it reads."""

import pytest

from numsoft.cpu import auto, machine
from numsoft.cpu.auto import THREE_PASS_STORE, TWO_PASS, choose_algorithm

MIB = 1 << 20


@pytest.fixture
def l3_32mib(monkeypatch):
    monkeypatch.setattr(auto, "last_level_cache_bytes", lambda: 32 * MIB)


@pytest.mark.parametrize(("threads", "lanes"), [(1, 16), (2, 8), (2, 16), (8, 16)])
def test_in_cache_is_store_whatever_the_machine(l3_32mib, threads, lanes):
    # 16 MiB of float32: half the last-level cache, the output takes the other half
    assert choose_algorithm(4096, 4, 1024, threads, lanes) == THREE_PASS_STORE


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
    assert choose_algorithm(4096, 4, 4096, threads, lanes) == expected


def test_the_cache_threshold_is_the_machines(monkeypatch):
    monkeypatch.setattr(auto, "last_level_cache_bytes", lambda: 2 * MIB)
    assert choose_algorithm(1024, 4, 256, 2, 16) == THREE_PASS_STORE  # 1 MiB
    assert choose_algorithm(1024, 4, 512, 2, 16) == TWO_PASS  # 2 MiB


def test_last_level_cache_is_read_from_sys(monkeypatch, tmp_path):
    for index, (kind, size) in enumerate([("Data", "48K"), ("Instruction", "32K"),
                                          ("Unified", "2048K"), ("Unified", "36M")]):  # fmt: skip
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    monkeypatch.setattr(machine, "_CACHE_DIR", tmp_path)
    machine.last_level_cache_bytes.cache_clear()
    try:
        assert machine.last_level_cache_bytes() == 36 * MIB
        monkeypatch.setattr(machine, "_CACHE_DIR", tmp_path / "absent")
        machine.last_level_cache_bytes.cache_clear()
        assert machine.last_level_cache_bytes() == machine.DEFAULT_LAST_LEVEL_CACHE
    finally:
        machine.last_level_cache_bytes.cache_clear()


def test_a_middle_axis_out_of_cache_is_online_in_chunks_of_rows(l3_32mib):
    # column_chunks: 2 reads, 1 write, every one contiguous (docs/performance.md)
    from numsoft.cpu.auto import ONLINE

    assert choose_algorithm(4096, 4, 1024, 2, 16, columns=True) == THREE_PASS_STORE
    for threads, lanes in [(1, 8), (2, 16)]:
        assert choose_algorithm(4096, 4, 4096, threads, lanes, columns=True) == ONLINE
