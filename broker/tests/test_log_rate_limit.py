"""The repeated-line filter (broker/observability/log_rate_limit.py) as pure logic, on an injected clock,
through a real logging.Logger and handler so templates, levels and summaries are what an
operator would read."""

from __future__ import annotations

import logging
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.observability.log_rate_limit import RepeatedLineFilter, install


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


def setup(lines: int = 3, interval_s: float = 10.0, max_kinds: int = 100):
    clock, out = Clock(), Lines()
    out.addFilter(RepeatedLineFilter(out.handle, lines=lines, interval_s=interval_s, clock=clock,
                                     max_kinds=max_kinds))
    log = logging.getLogger(f"ratelimit-test-{id(out)}")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(out)
    return log, clock, out.lines


def test_at_most_n_lines_of_a_template_per_interval_then_one_summary():
    log, clock, lines = setup(lines=3, interval_s=10)
    for peer in range(1000):
        log.warning("closing connection from %s: %s", f"10.0.0.{peer}", "bad frame")
    assert len(lines) == 3
    clock.now += 10
    log.warning("closing connection from %s: %s", "10.0.0.9", "bad frame")
    assert lines[3] == f"WARNING {log.name}: suppressed 997 lines like 'closing connection from %s: %s' in the last 10 s"
    assert lines[4].endswith("closing connection from 10.0.0.9: bad frame")
    assert len(lines) == 5


def test_templates_and_loggers_are_counted_apart():
    log, clock, lines = setup(lines=2)
    other = logging.getLogger(log.name + ".other")
    for _ in range(5):
        log.warning("a %s", 1)
        log.warning("b %s", 1)
        other.warning("a %s", 1)  # propagates to the same handler: a kind of its own
    assert sorted(lines) == sorted([f"WARNING {log.name}: a 1"] * 2 + [f"WARNING {log.name}: b 1"] * 2
                                   + [f"WARNING {other.name}: a 1"] * 2)


def test_a_summary_comes_with_the_next_line_of_any_kind():
    log, clock, lines = setup(lines=1, interval_s=5)
    for _ in range(4):
        log.error("noisy %d", 1)
    clock.now += 6
    log.info("something else")
    assert lines == [f"ERROR {log.name}: noisy 1",
                     f"ERROR {log.name}: suppressed 3 lines like 'noisy %d' in the last 6 s",
                     f"INFO {log.name}: something else"]


def test_nothing_suppressed_means_no_summary_and_a_fresh_window():
    log, clock, lines = setup(lines=2, interval_s=5)
    log.warning("x")
    clock.now += 5
    log.warning("x")
    log.warning("x")
    log.warning("x")  # third in the new window: suppressed
    assert lines == [f"WARNING {log.name}: x"] * 3


def test_preformatted_messages_keep_memory_bounded():
    log, clock, lines = setup(lines=1, max_kinds=10)
    flt = log.handlers[0].filters[0]
    for i in range(500):
        log.warning(f"unique {i}")
    assert len(lines) == 500  # each is its own kind: none suppressed
    assert len(flt._windows) <= 10


def test_threads_never_pass_more_than_the_limit():
    log, clock, lines = setup(lines=50)

    def spam() -> None:
        for _ in range(2000):
            log.warning("from a thread %s", "x")

    threads = [threading.Thread(target=spam) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lines) == 50


@settings(max_examples=200)
@given(st.lists(st.tuples(st.floats(0, 30), st.sampled_from(["a %s", "b %s", "c"])), max_size=300),
       st.integers(1, 5), st.floats(1, 20))
def test_every_line_is_passed_or_counted_in_a_summary(events, limit, interval):
    """Over any sequence: per kind, lines passed + lines summarized as suppressed = lines logged
    (once every window is closed by a final line), and no window passes more than `limit`."""
    log, clock, lines = setup(lines=limit, interval_s=interval)
    logged = {"a %s": 0, "b %s": 0, "c": 0}
    for dt, template in events:
        clock.now += dt
        if "%" in template:
            log.warning(template, "v")
        else:
            log.warning(template)
        logged[template] += 1
    clock.now += interval + 1
    log.warning("final")
    seen = {k: 0 for k in logged}
    for line in lines:
        msg = line.split(": ", 1)[1]
        if msg.startswith("suppressed "):
            count, rest = msg[len("suppressed "):].split(" lines like ", 1)
            seen[rest.rsplit(" in the last", 1)[0].strip("'")] += int(count.replace(",", ""))
        elif msg != "final":
            seen[{"a v": "a %s", "b v": "b %s", "c": "c"}[msg]] += 1
    assert seen == logged


def test_install_covers_every_logger_through_the_root_handlers():
    root = logging.getLogger(f"fake-root-{id(object())}")
    root.propagate = False
    out = Lines()
    root.addHandler(out)
    (flt,) = install(root, lines=2)
    asyncio_like = logging.getLogger(root.name + ".asyncio")
    asyncio_like.setLevel(logging.WARNING)
    for _ in range(100):
        asyncio_like.warning("socket.send() raised exception.")
    assert len(out.lines) == 2 and out.filters == [flt]
