"""Fixtures that give compat tests a real broker process.

- `storage_mode`: module-scoped, parametrized over STORAGE_MODES (broker_process.py), so every
  test in compat_tests runs once per storage engine.
- `broker`: one broker process per test module and storage mode; tests use `unique_topic`
  names. A test during which that process dies fails, whatever its own assertions said.
- `fresh_broker`: a broker of its own for one test (restart, kill -9, data-dir inspection).
- `broker_factory`: for tests that need broker flags of their own; stopped at teardown.

TWINLOG_COMPAT_BROKER=tansu runs the same tests against the Tansu peer broker (see FINDINGS.md);
TWINLOG_COMPAT_EXTRA_ARGS="--flag value ..." is appended to every `twinlog serve` command line;
TWINLOG_COMPAT_KEEP=1 keeps each broker's data dir and log after the run.

When a test fails, the part of each broker's log written during that test is attached to the
failure report as a "broker log" section.
"""

from __future__ import annotations

import gc

import pytest

from compat_tests.helpers.broker_process import STORAGE_MODES, BrokerProcess, broker_kind
from compat_tests.helpers.cluster import Cluster
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import create_topic, unique_topic


def _modes() -> list[str]:
    # Tansu has one (in-memory) store: running its tests once per twinlog mode would only repeat them.
    return STORAGE_MODES if broker_kind() == "twinlog" else ["tansu-memory"]


@pytest.fixture(scope="module", params=_modes())
def storage_mode(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def _module_broker(request, storage_mode):
    """One broker for the module's tests, started with the module's BROKER_ARGS if it sets them."""
    proc = BrokerProcess(storage_mode=storage_mode, extra_args=list(getattr(request.module, "BROKER_ARGS", ())))
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def client(broker):
    """A raw protocol client to the module's broker."""
    c = Client.to(broker)
    yield c
    c.close()


@pytest.fixture
def broker(_module_broker):
    """The module's shared broker. If an earlier test crashed it (that test is failed for it by
    pytest_runtest_makereport below), it is started again on the same data dir."""
    if not _module_broker.is_running():
        _module_broker.start()
    return _module_broker


@pytest.fixture
def fresh_broker(storage_mode):
    proc = BrokerProcess(storage_mode=storage_mode)
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def broker_factory(storage_mode):
    made: list[BrokerProcess] = []

    def make(*extra_args: str, start: bool = True) -> BrokerProcess:
        proc = BrokerProcess(storage_mode=storage_mode, extra_args=list(extra_args))
        made.append(proc)
        return proc.start() if start else proc

    yield make
    for proc in made:
        proc.cleanup()


@pytest.fixture
def topic_factory(broker):
    """`topic_factory("prefix", partitions=3, configs={...})` -> name of a new, ready topic."""
    def make(prefix: str, partitions: int = 1, configs: dict | None = None) -> str:
        return create_topic(broker.bootstrap, unique_topic(prefix), partitions, configs)
    return make


@pytest.fixture(autouse=True)
def _collect_client_handles():
    """librdkafka handles (confluent AdminClient has no close()) live until collected; collecting
    after each test stops them from reconnecting to, and logging about, brokers already gone."""
    yield
    gc.collect()


def _brokers_of(item) -> list[BrokerProcess]:
    """The test's broker processes: its BrokerProcess arguments and those of its clusters."""
    funcargs = getattr(item, "funcargs", {}) or {}
    procs = [v for v in funcargs.values() if isinstance(v, BrokerProcess)]
    procs += [b for v in funcargs.values() if isinstance(v, Cluster) for b in v.brokers.values()]
    unique = {id(b): b for b in procs}
    return list(unique.values())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    item._broker_log_marks = {id(b): b.log_size() for b in _brokers_of(item)}
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    shared = (getattr(item, "funcargs", None) or {}).get("broker")
    if isinstance(shared, BrokerProcess) and not shared.is_running() and report.passed:
        report.outcome = "failed"
        report.longrepr = (f"the shared broker process died during this test "
                           f"(exit code {shared.returncode})\n{shared.log_tail(80)}")
        return
    if not report.failed:
        return
    marks = getattr(item, "_broker_log_marks", {})
    for b in _brokers_of(item):
        text = b.log_tail(lines=150, since=marks.get(id(b), 0))
        report.sections.append((f"broker log ({b!r})", text))
