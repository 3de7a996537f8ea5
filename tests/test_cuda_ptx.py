"""Every CUDA kernel compiles to PTX for a real device (sm_90) without a GPU, and its
machine code fits the largest block numsoft launches.

``numba.cuda.compile_ptx`` needs no GPU once numba-cuda's NVVM is installed
(``numba-cuda[cu13]``), but compiling a kernel that calls device functions asks the
current device for its compute capability; the test answers (9, 0) in its place.
The PTX is then assembled for sm_90 with nvJitLink (from ``cuda-bindings``), which
reports the registers each thread uses: a block of ``launch.LAUNCH_BOUND`` threads
must fit the SM's 65536 registers, or the launch fails on a GPU with "too many resources
requested" (which the simulator never sees). The row kernels' machine code is also
disassembled (nvdisasm, from the ``nvidia-cuda-nvdisasm`` wheel) to check that their
row loads go a register tile at a time (``numsoft/cuda/tile.py``). Skipped when
numba-cuda, NVVM, nvJitLink or (for that check) nvdisasm is missing, and under the
simulator.
"""

import os
import re
import subprocess
import tempfile
import types

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    pytest.skip("compile_ptx is not available under the CUDA simulator", allow_module_level=True)

# numba-cuda itself (the [cuda] extra): Numba's own, older numba.cuda has another
# compile_ptx (no launch_bounds)
pytest.importorskip("numba_cuda")
cuda = pytest.importorskip("numba.cuda")
dispatcher = pytest.importorskip("numba.cuda.dispatcher")
from numba import float32, float64  # noqa: E402

from numsoft.cuda._jit import KERNELS  # noqa: E402
from numsoft.cuda.launch import LAUNCH_BOUND  # noqa: E402
from numsoft.cuda.tile import TILE_BYTES  # noqa: E402
from numsoft.frontdoor import gpu  # noqa: E402,F401  (imports every kernel module)

CC = (9, 0)
REGISTERS_PER_SM = 65536  # every compute capability from 5.0 to 12.x


@pytest.fixture
def offline_device(monkeypatch):
    if not hasattr(dispatcher, "get_current_device"):
        pytest.skip("this numba-cuda version compiles device functions differently")
    monkeypatch.setattr(
        dispatcher, "get_current_device", lambda: types.SimpleNamespace(compute_capability=CC)
    )
    try:
        cuda.compile_ptx(lambda a: None, (float32[:],), cc=CC)
    except Exception as exc:  # NVVM / libdevice missing
        pytest.skip(f"CUDA toolkit pieces for compile_ptx are missing: {exc}")


@pytest.mark.parametrize("ft", [float32, float64], ids=str)
@pytest.mark.parametrize("entry", KERNELS, ids=lambda e: e[0].__name__)
def test_kernel_compiles_and_fits_the_largest_block(offline_device, entry, ft):
    fn, argtypes = entry
    ptx, _ = cuda.compile_ptx(fn, argtypes(ft), cc=CC, launch_bounds=LAUNCH_BOUND)
    assert ".target sm_90" in ptx
    assert ".entry" in ptx
    if ft == float32:
        # float32 kernels keep float32 arithmetic: no double-precision instruction.
        assert not re.search(r"\.f64\b", ptx), "float64 arithmetic in a float32 kernel"
    log, _ = _assemble(ptx)
    registers = max(int(r) for r in re.findall(r"Used (\d+) registers", log))
    assert registers * LAUNCH_BOUND <= REGISTERS_PER_SM, log


@pytest.mark.parametrize("ft", [float32, float64], ids=str)
@pytest.mark.parametrize("name", ["softmax_kernel", "logsumexp_kernel"])
def test_row_sweeps_keep_a_tile_of_loads_in_flight(offline_device, name, ft):
    # Every read of the row goes through numsoft.cuda.tile: in the machine code a thread
    # issues a whole register tile of loads (32 bytes) before it uses any of them, and
    # the tile is not in local memory. (A load-then-use loop keeps one load in flight.)
    fn, argtypes = next(entry for entry in KERNELS if entry[0].__name__ == name)
    ptx, _ = cuda.compile_ptx(fn, argtypes(ft), cc=CC, launch_bounds=LAUNCH_BOUND)
    assert ".local" not in ptx, "the register tile went to local memory"
    runs = _load_runs(_disassemble(ptx))
    assert runs, "no global load found"
    assert min(runs) >= TILE_BYTES // (ft.bitwidth // 8), runs


def _disassemble(ptx: str) -> str:
    """The SASS of ``ptx`` assembled for sm_90 (nvJitLink, then nvdisasm)."""
    pathfinder = pytest.importorskip("cuda.pathfinder")
    nvdisasm = pathfinder.find_nvidia_binary_utility("nvdisasm")
    if nvdisasm is None:
        pytest.skip("nvdisasm is missing (pip install nvidia-cuda-nvdisasm)")
    _, cubin = _assemble(ptx)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        done = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True)
    return done.stdout


def _load_runs(sass: str) -> list[int]:
    """Lengths of the runs of global/generic loads (``LDG``/``LD``) issued before any of
    their values is read: a thread stalls on a load only where its register is read."""
    load = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?LDG?\.E\S*\s+(R\d+),")
    runs, pending = [], set()
    for line in sass.splitlines():
        m = load.search(line)
        if m:
            pending.add(m.group(1))
            continue
        sources = line.split(",", 1)[1] if "," in line else ""
        if pending and any(re.search(rf"\b{r}\b", sources) for r in pending):
            runs.append(len(pending))
            pending = set()
    return runs


def test_kernels_are_compiled_with_the_launch_bound():
    from numsoft.cuda.rows import softmax_kernel

    assert softmax_kernel.targetoptions.get("launch_bounds") == LAUNCH_BOUND


def _assemble(ptx: str) -> tuple[str, bytes]:
    """(nvJitLink's verbose log, with the register counts; the cubin) of assembling
    ``ptx`` for sm_90."""
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    options = [f"-arch=sm_{CC[0]}{CC[1]}", "-verbose"]
    handle = nvjitlink.create(len(options), options)
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel.ptx")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
    finally:
        nvjitlink.destroy(handle)
    return log.decode(errors="replace"), bytes(cubin)
