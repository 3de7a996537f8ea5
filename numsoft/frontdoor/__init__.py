"""The front door: the one argument handling of every backend.

Below the public functions and the array-type router (``numsoft.route``), above the
backends (``numsoft.cpu``, ``numsoft.cuda``). Every call on NumPy (or device) data comes
through here, one job per module:

- ``arguments``: every argument checked and normalized once, errors naming it;
- ``layout``: the input as the kernels' ``(outer, n, inner)`` view, or a copy;
- ``prepare``: the two combined into the kernels' source (``prepare``), whoever holds
  the memory (``memory_of``: ``cpu.memory.HOST`` or ``cuda.memory.DEVICE``);
- ``run``: the CPU runners and what every function shares around its kernels (``out``,
  dtype rounding, masks, logsumexp's weights, the backward passes);
- ``gpu``: the same functions on the GPU (imported only for a GPU call).
"""
