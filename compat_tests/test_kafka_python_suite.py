"""kafka-python's own integration suite (3.0.12, test/integration) against our broker.

The suite comes from kafka-python's sdist (compat_tests/install_deps.sh extracts it into
.deps/kafka-python-suite/). It runs in a pytest subprocess pointed, through the suite's own
external-broker switch KAFKA_URI, at a broker process of its own (broker_factory, with node
id 0 as the suite expects; once per storage mode like every compat test). The sdist lacks two
files the suite needs; we supply them before every run: test/__init__.py (without it
`import test.testutil` finds the stdlib's `test` package) and test/service.py
(kafka_python_suite/service.py here).

KAFKA_VERSION is "4.0". The suite passes it to every client as `api_version` and gates tests
and expectations on it:
  - it is a cap, not a promise: each connection still sends ApiVersions and drops to what the
    broker advertises when that is lower, so naming 4.0 costs nothing on a broker with less;
  - below 4.0 the fixtures would look for ZooKeeper, and the tests for DescribeTopicPartitions
    and DescribeQuorum (KRaft-era APIs) are skipped, and describe_configs expectations follow
    the pre-KRaft broker;
  - 4.0 is the protocol generation twinlog follows (Produce v0-v2 removed, as in Kafka 4) and
    the oldest 4.x line, so 4.1+-only tests (ListConfigResources) stay skipped;
  - "4.0" rather than "4.0.0": it is the exact key of kafka-python's version table, so no
    "not supported; using (4, 0)" warning in every client, and test_kafka_version_infer
    checks that ApiVersions makes kafka-python infer exactly 4.0.
Override with TWINLOG_KP_SUITE_KAFKA_VERSION to experiment; the allowlist assumes 4.0.

Outcomes are recorded per node id by kafka_python_suite/outcome_recorder.py. Every node id in
kafka_python_suite/allowlist.txt must pass, or this test fails (a regression); tests that pass
without being on the allowlist are printed and raised as a warning, to be added. Tests in
kafka_python_suite/deselected.txt are never run, each for the reason written there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest

from compat_tests.broker_process import broker_kind

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "kafka_python_suite"
SUITE = HERE / ".deps" / "kafka-python-suite"
ALLOWLIST = HARNESS / "allowlist.txt"
DESELECTED = HARNESS / "deselected.txt"

KAFKA_VERSION = os.environ.get("TWINLOG_KP_SUITE_KAFKA_VERSION", "4.0")
PER_TEST_TIMEOUT_S = 60
# The whole CI run has 90 minutes; the suite gets at most 10 of them per storage mode.
SUITE_BUDGET_S = 600


def read_id_list(path: Path) -> dict[str, str]:
    """`node-id  # comment` lines -> {node id: comment}; blank and pure-comment lines skipped."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        nodeid, _, comment = line.partition("#")
        nodeid = nodeid.strip()
        if nodeid:
            out[nodeid] = comment.strip()
    return out


def final_outcomes(records: list[dict]) -> dict[str, dict]:
    """Fold per-phase reports into one outcome per node id.

    passed / failed (in the test body) / error (in setup, teardown or collection) / skipped /
    xfailed / xpassed / deselected / incomplete (started, never finished: the run was cut).
    """
    by_id: dict[str, list[dict]] = {}
    for r in records:
        by_id.setdefault(r["nodeid"], []).append(r)
    out = {}
    for nodeid, reps in by_id.items():
        phases = {r["when"]: r for r in reps}
        duration = sum(r["duration"] for r in reps)
        failed = [r for r in reps if r["outcome"] == "failed"]
        if "deselect" in phases:
            outcome, reason = "deselected", ""
        elif failed:
            first = failed[0]
            outcome = "failed" if first["when"] == "call" else "error"
            reason = f"[{first['when']}] {first['reason']}"
        elif any(r["outcome"] == "skipped" for r in reps):
            skip = next(r for r in reps if r["outcome"] == "skipped")
            outcome, reason = ("xfailed" if skip["wasxfail"] else "skipped"), skip["reason"]
        elif "call" in phases and "teardown" in phases:
            outcome = "xpassed" if phases["call"]["wasxfail"] else "passed"
            reason = ""
        else:
            outcome, reason = "incomplete", "run ended before this test finished"
        out[nodeid] = {"outcome": outcome, "reason": reason, "duration": round(duration, 1)}
    return out


def prepare_suite() -> None:
    conftest = SUITE / "test" / "integration" / "conftest.py"
    if not conftest.is_file():
        pytest.fail(f"kafka-python's suite is not at {SUITE}: run `bash compat_tests/install_deps.sh`",
                    pytrace=False)
    shutil.copyfile(HARNESS / "service.py", SUITE / "test" / "service.py")
    (SUITE / "test" / "__init__.py").touch()


def run_suite(broker, workdir: Path) -> tuple[int | None, dict[str, dict], Path]:
    outcomes_path = workdir / "outcomes.jsonl"
    output_path = workdir / "suite-output.txt"
    kafka_root = workdir / "kafka-root"  # the fixtures insist it exists; nothing is run from it
    kafka_root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update({
        "KAFKA_URI": f"kafka://{broker.host}:{broker.port}",
        "KAFKA_VERSION": KAFKA_VERSION,
        "KAFKA_ROOT": str(kafka_root),
        "TWINLOG_SUITE_OUTCOMES": str(outcomes_path),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HARNESS), env.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    cmd = [sys.executable, "-m", "pytest", "test/integration",
           "-p", "outcome_recorder", "-p", "no:cacheprovider",
           f"--timeout={PER_TEST_TIMEOUT_S}",
           # "signal" fails just the stuck test; the suite's default "thread" exits the run.
           "--timeout-method=signal",
           "-o", "log_level=WARNING", "-q", "-rfE", "--durations=15"]
    for nodeid in read_id_list(DESELECTED):
        cmd += ["--deselect", nodeid]
    with open(output_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=SUITE, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(SUITE_BUDGET_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    records = []
    if outcomes_path.exists():
        records = [json.loads(line) for line in outcomes_path.read_text().splitlines() if line.strip()]
    return rc, final_outcomes(records), output_path


def outcome_table(outcomes: dict[str, dict]) -> str:
    lines = []
    for nodeid, o in sorted(outcomes.items()):
        lines.append(f"{o['outcome']:<10} {o['duration']:>6.1f}s  {nodeid}  {o['reason']}".rstrip())
    return "\n".join(lines)


@pytest.mark.timeout(SUITE_BUDGET_S + 120)
def test_kafka_python_integration_suite(broker_factory, tmp_path):
    # A broker of its own with node id 0: the suite's fixtures are built around broker 0
    # (KafkaFixture.instance(0, ...), also for an external broker), and test_create_partitions
    # assigns the new partitions' replicas to broker 0 by number.
    # Group settings are those of a broker configured for tests: test_group asks for a 3 s
    # session timeout, below Kafka's default group.min.session.timeout.ms of 6 s, and each
    # group test would otherwise wait out the 3 s initial rebalance delay.
    # The authorizer is on with the suite's PLAINTEXT principal User:ANONYMOUS as the super user,
    # so test_create_describe_delete_acls runs (without an authorizer the ACL APIs answer
    # SECURITY_DISABLED, as Kafka's) and every other test is allowed as before.
    # (Tansu, the peer broker, has a fixed node id and no such flags.)
    twinlog_args = ("--node-id", "0", "--group-min-session-timeout-ms", "1000",
                    "--group-initial-rebalance-delay-ms", "0", "--authorizer", "--super-users", "User:ANONYMOUS")
    broker = broker_factory(*(twinlog_args if broker_kind() == "twinlog" else ()))
    prepare_suite()
    allowlist = read_id_list(ALLOWLIST)
    assert allowlist, f"{ALLOWLIST} is empty: nothing would be checked"

    started = time.monotonic()
    rc, outcomes, output_path = run_suite(broker, tmp_path)
    elapsed = time.monotonic() - started

    counts = Counter(o["outcome"] for o in outcomes.values())
    table = outcome_table(outcomes)
    mode = getattr(broker, "storage_mode", "?")
    (SUITE / f"last-outcomes-{mode}.txt").write_text(table + "\n")
    print(f"kafka-python {KAFKA_VERSION} suite vs {broker!r}: {dict(sorted(counts.items()))} "
          f"in {elapsed:.0f}s (exit code {rc})")
    print(table)
    output_tail = "\n".join(output_path.read_text(errors="replace").splitlines()[-40:])

    assert broker.is_running(), f"the broker died during the suite\n{broker.log_tail(80)}"
    assert rc is not None, (
        f"suite exceeded its {SUITE_BUDGET_S}s budget and was killed; finished so far: "
        f"{dict(counts)}; deselect the test that hangs (see {output_path})\n{output_tail}")
    # 0: all passed; 1: some failed. 2 (interrupted), 3 (internal error), 4 (usage) and
    # 5 (nothing collected) mean the harness itself is broken.
    assert rc in (0, 1), f"suite pytest exited {rc}\n{output_tail}"

    regressions = {n: outcomes.get(n, {"outcome": "missing", "reason": "not in the suite's results"})
                   for n in allowlist if outcomes.get(n, {}).get("outcome") != "passed"}
    newly_passing = sorted(n for n, o in outcomes.items() if o["outcome"] == "passed" and n not in allowlist)
    if newly_passing:
        note = ("kafka-python suite tests passing but not on the allowlist (add them to "
                f"{ALLOWLIST.relative_to(HERE.parent)}):\n  " + "\n  ".join(newly_passing))
        print(note)
        warnings.warn(note)

    assert not regressions, (
        f"{len(regressions)} allowlisted kafka-python test(s) did not pass:\n"
        + "\n".join(f"  {o['outcome']:<10} {n}  {o['reason']}" for n, o in sorted(regressions.items()))
        + f"\n\nsuite output tail ({output_path}):\n{output_tail}")
