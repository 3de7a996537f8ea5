"""numsoft's version (the package metadata's, ``pyproject.toml``)."""

__version__ = "0.1.0"
