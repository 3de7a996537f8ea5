"""NumPy views of other libraries' host arrays and back, through DLPack (no copy)."""

from __future__ import annotations

import numpy as np

from .._array_kinds import library_of


def read_host(value, name: str) -> np.ndarray:
    """A NumPy view of another library's host array (DLPack, no copy), or a copy when
    DLPack refuses it (negative strides); a ``TypeError`` naming ``name`` otherwise."""
    try:
        return np.from_dlpack(value)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        reason = str(exc)
    try:
        return np.asarray(value)
    except Exception:
        raise TypeError(
            f"{name}: a {library_of(value)} array that NumPy cannot read ({reason})"
        ) from None


def exportable(a: np.ndarray) -> np.ndarray:
    """``a`` in a form every DLPack consumer takes: writable, no negative strides."""
    if a.flags.writeable and min(a.strides, default=0) >= 0:
        return a
    return np.array(a)
