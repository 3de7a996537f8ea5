"""The wheel build: compiled kernels per x86-64 level (``kernels``) and the PEP 517
backend that puts them in the wheel (``numsoft_build_backend``, named in
``pyproject.toml``). Nothing here is imported at run time."""
