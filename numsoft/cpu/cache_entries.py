"""What numsoft's cache entries are valid for, and the warnings when a cache file fails.

Read by the kernels' own cache (``_jit``) and by the shipped kernels' loader
(``shipped``): an entry is valid for this exact numsoft source only
(``source_stamp``).
"""

from __future__ import annotations

import functools
import hashlib
import pathlib


class CacheUnavailableWarning(UserWarning):
    """No writable Numba cache location: kernels compile anew in every process."""


class CacheFaultWarning(UserWarning):
    """A cache file could not be read (corrupt) or written (disk full, read-only): the
    kernel was compiled instead, and the result is unaffected."""


@functools.cache
def package_source_digest() -> str:
    """SHA-256 of the path and bytes of every ``.py`` file of the numsoft package."""
    root = pathlib.Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def source_stamp() -> tuple[str, str]:
    """The source stamp of numsoft's cache entries, in place of Numba's
    (``_jit._stamp_with_package_sources``)."""
    return ("numsoft sources", package_source_digest())
