"""numsoft on Dask arrays: lazy softmax, log_softmax and logsumexp over chunked arrays.

Import it explicitly (``import numsoft.dask``); ``import numsoft`` never imports Dask.
Every function builds a Dask graph and returns a lazy ``dask.array.Array``; nothing is
computed before ``.compute()`` (or ``dask.compute``, ``dask.array.store``, ...). Argument
errors are raised immediately, when the graph is built.

How the normalized axes are handled (SPEC §7):

- **Every normalized axis lies within one chunk**: each block holds whole rows, so the
  NumPy API (``numsoft.softmax`` and friends) is mapped over the blocks
  (``dask.array.map_blocks``): one pass, exactly the CPU result.
- **A normalized axis is split across chunks**: two passes, no rechunking.
  Pass 1 summarizes each block's piece of every row as an online partial ``(m, d)``
  (max, Σ exp((x - m)/t); ``numsoft.cpu.partials``) and a tree reduction
  (``dask.array.reduction``) merges the partials of a row:
  ``M = max m_i``, ``D = Σ d_i·exp((m_i - M)/t)``, carrying NaN and ±inf so that SPEC §1
  holds for the whole row. Pass 2 writes ``exp((x - M)/t) / D`` blockwise.
  ``logsumexp`` is ``M + t·log D``: pass 1 only.

``ssmax``, ``stablemax`` and ``softplus_l1`` are softmax of an elementwise transform of
``x`` (``s·log(n)·z``, ``log s(z)``, ``log softplus(z)``), so they take the same two
paths. Variants without such a chunked reduction (sparsemax, entmax, ...) have no
function here: the main API maps them over blocks that hold whole rows.

The main API comes here for every Dask array (``numsoft.softmax(x)`` is ``softmax``
below): the router's ``numsoft.route.dask_calls`` gives each public function its lazy
form, its blockwise map or a ``TypeError`` naming what to do. The functions are
defined in ``numsoft.route.dask_lazy``, their graphs in ``numsoft.route.dask_graphs``.

The kernels of the split path (``numsoft.cpu.partials``) run serially: Dask already
runs one task per core. See ``docs/dask.md``.
"""

from .route.dask_lazy import log_softmax, logsumexp, softmax, softplus_l1, ssmax, stablemax

__all__ = ["softmax", "log_softmax", "logsumexp", "ssmax", "stablemax", "softplus_l1"]
