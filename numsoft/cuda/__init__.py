"""CUDA backend (numba-cuda): the core functions on NVIDIA GPUs, mirroring ``numsoft.cpu``.

Nothing here is imported by ``import numsoft``: the public functions load
``numsoft.frontdoor.gpu`` only when a call has ``target="cuda"`` or a device array
(``__cuda_array_interface__``). See ``docs/gpu.md`` for the kernel structure.
"""
