"""Settings for this repository's own test run; users of the pytest plugin do not get them.

hypothesis fails an example that takes over 200 ms by default. That deadline measures the
machine, not the code: under `make test` (four xdist workers beside brokers and JVMs on two
cores) a pure function's example has taken longer. Speed is measured in bench/, so the
examples here have no deadline.
"""

from hypothesis import settings

settings.register_profile("twinlog", deadline=None)
settings.load_profile("twinlog")
