import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # the test oracle module

# The CUDA backend's tests run in their own pytest process, under the CUDA simulator
# (NUMBA_ENABLE_CUDASIM=1) or on a GPU (NUMSOFT_TEST_CUDA=1); see tests/cuda/conftest.py.
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and os.environ.get("NUMSOFT_TEST_CUDA") != "1":
    collect_ignore = ["cuda"]
