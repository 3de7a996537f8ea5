"""Pass-structure codes on the device and the rule behind ``algorithm="auto"`` there.

The codes are the CPU's (``numsoft.vocabulary``), so a validated ``algorithm`` name means
the same thing on both targets. On a GPU the exp is cheap and every row is read in a
coalesced sweep, so the cost is memory traffic: ``online`` moves 2 reads + 1 write per
element (the second read of a row mostly from L2) and is the default. ``three-pass-store``
would add a write and a read of y and has no GPU kernel: it runs as three-pass-reload.
"""

from __future__ import annotations

from ..vocabulary import ALGORITHM_NAMES, ONLINE, THREE_PASS_RELOAD

__all__ = ["device_algorithm"]


def device_algorithm(algorithm: str) -> int:
    """Code of the device pass structure for a validated ``algorithm`` name."""
    if algorithm == "auto":
        return ONLINE
    if algorithm == "three-pass-store":
        return THREE_PASS_RELOAD
    return ALGORITHM_NAMES.index(algorithm)
