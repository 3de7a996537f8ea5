import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # the test oracle module

# The CUDA tests run in their own pytest process under the simulator (README).
collect_ignore = [] if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["cuda"]
