"""The research variants' row kernels and their drivers (the public functions are in
``numsoft.variants``; the device kernels in ``numsoft.cuda.variants``).

``codes`` numbers the variants, ``driver`` applies one to every row (one compiled path
per variant, ``numsoft.cpu.paths``), ``passes`` and ``select`` hold the single passes
the families share, and each family module (``sparse``, ``scaled``, ``stable``,
``elementwise``, ``sampling``, ``topk``) its row kernels.
"""
