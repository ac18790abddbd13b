"""Settings for this repository's own test run; users of the pytest plugin do not get them.

hypothesis fails an example that takes over 200 ms by default. That deadline measures the
machine, not the code: under `make test` (four xdist workers beside brokers and JVMs on two
cores) a pure function's example has taken longer. Speed is measured in bench/, so the
examples here have no deadline.

kio registers Hypothesis strategies when Hypothesis is installed, as it is here; that builds
Hypothesis's Unicode table, 1.6 s of CPU, cached in `.hypothesis/` of the working directory. A
broker in a fresh work dir paid it at every start (0.65 s to listening became 2.5 s). `twinlog`
commands now never import Hypothesis (broker/cli/main.py); the other Python processes the tests
start in their own directories (Spark's workers, workload scripts) share this checkout's cache.
"""

import os
from pathlib import Path

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(__file__).resolve().parent / ".hypothesis"))

from hypothesis import settings  # noqa: E402  (after the variable: Hypothesis reads it on first use)

settings.register_profile("twinlog", deadline=None)
settings.load_profile("twinlog")
