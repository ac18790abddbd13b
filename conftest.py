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

`make test-unit` is the quick answer (docs/testing.md): it deselects the tests marked `system`
(below) and loads the `unit` profile, under which every property runs a tenth of the examples it
runs in `make test`.
"""

import os
from pathlib import Path

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(__file__).resolve().parent / ".hypothesis"))

import pytest  # noqa: E402
from hypothesis import is_hypothesis_test, settings  # noqa: E402  (after the variable: Hypothesis reads it on first use)

from broker.heap_freezer import freeze_heap  # noqa: E402

settings.register_profile("twinlog", deadline=None)
settings.load_profile("twinlog")
# Selected by `--hypothesis-profile=unit` (Makefile: test-unit). Its settings are twinlog's: most
# properties set their own max_examples, which a profile cannot lower, so the hook below does.
settings.register_profile("unit", settings.get_profile("twinlog"))
UNIT_SHARE_OF_EXAMPLES = 10  # the unit profile runs 1/10 of each property's examples, at least one

# Fixtures that reach past the test's own process: a real etcd (broker/cluster/tests/conftest.py)
# or a tmpfs mounted as root (broker/tests/conftest.py). Tests using them get the `system` marker:
# `make test` runs them, `make test-unit` deselects them. A test that runs a child process at
# length carries the marker itself (wire/tests/test_request_bounds.py).
SYSTEM_FIXTURES = {"etcd", "own_etcd", "small_disk"}


def pytest_collection_modifyitems(items):
    lowered: set[int] = set()  # the parametrized items of one test share its function: lower it once
    for item in items:
        if SYSTEM_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker("system")
        if settings.get_current_profile_name() == "unit":
            _run_a_share_of_the_examples(item, lowered)


def pytest_collection_finish(session):
    """What collection loaded (the clients, the codec's ~2,000 classes, Hypothesis, pyspark) lives
    to the end of the run: frozen, it is left out of every garbage collection after, which then
    walks only what tests made. compat_tests and spark/tests collect after each test (their
    client-handle fixtures); a walk of a whole worker's heap took 0.15-0.5 s, and teardowns were
    800 s of a `make test` run (test_fetch_protocol_versions.py: 39.5 s of its 81 s, 3.3 s now).
    The broker's own freeze does it: collect in full, then freeze what is alive."""
    freeze_heap(full=True)


def _run_a_share_of_the_examples(item, lowered: set[int]) -> None:
    """Lowers the test's max_examples where Hypothesis reads it when the test runs: on a @given
    function, the settings @given and @settings leave on it; on a state machine's TestCase, its
    `settings`. Fails the run rather than leave a count as it was if Hypothesis moves them."""
    test = getattr(item, "obj", None)
    machine_case = getattr(item, "cls", None)
    if isinstance(getattr(machine_case, "settings", None), settings):
        if id(machine_case) not in lowered:
            lowered.add(id(machine_case))
            machine_case.settings = _a_share(machine_case.settings)
    elif test is not None and is_hypothesis_test(test):
        if not hasattr(test, "_hypothesis_internal_use_settings"):
            raise pytest.UsageError(f"{item.nodeid}: this Hypothesis keeps a test's settings elsewhere")
        if id(test) not in lowered:
            lowered.add(id(test))
            test._hypothesis_internal_use_settings = _a_share(test._hypothesis_internal_use_settings)


def _a_share(full: settings) -> settings:
    return settings(full, max_examples=max(1, full.max_examples // UNIT_SHARE_OF_EXAMPLES))
