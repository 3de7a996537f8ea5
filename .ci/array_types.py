"""Other array libraries' arrays in and out, from a wheel installed as a pip user
installs it (what numsoft needs for them is a declared dependency): an
``array_api_strict`` array and a torch CPU tensor each come back as their own type, and
the values match NumPy's. Run with the Python of a fresh venv; torch is checked where
it is installed."""

import numpy as np

import numsoft

x = np.random.default_rng(0).normal(size=(3, 5))
want = numsoft.softmax(x)

import array_api_strict as xp  # noqa: E402

got = numsoft.softmax(xp.asarray(x))
assert type(got) is type(xp.asarray(x)), type(got)
np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
print("array_api_strict: round trip ok")

try:
    import torch
except ImportError:
    print("torch: not installed here, skipped")
else:
    t = numsoft.softmax(torch.from_numpy(x.copy()))
    assert isinstance(t, torch.Tensor), type(t)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)
    print(f"torch {torch.__version__}: round trip ok")
