"""kafka-python's own integration suite (3.0.12, test/integration) against our broker.

The suite comes from kafka-python's sdist (compat_tests/install_deps.sh extracts it into
.deps/kafka-python-suite/). It runs in a pytest subprocess pointed, through the suite's own
external-broker switch KAFKA_URI, at a broker process of its own (broker_factory, with node
id 0 as the suite expects; once per storage mode like every compat test). The sdist lacks two
files the suite needs; we supply them before every run: test/__init__.py (without it
`import test.testutil` finds the stdlib's `test` package) and test/service.py
(kafka_python_suite/service.py here).

KAFKA_VERSION is "4.3". The suite passes it to every client as `api_version` and gates tests
and expectations on it:
  - it is a cap, not a promise: each connection still sends ApiVersions and drops to what the
    broker advertises when that is lower, so naming 4.0 costs nothing on a broker with less;
  - below 4.0 the fixtures would look for ZooKeeper, and the tests for DescribeTopicPartitions
    and DescribeQuorum (KRaft-era APIs) are skipped, and describe_configs expectations follow
    the pre-KRaft broker;
  - 4.3 is the newest Kafka whose versions twinlog serves for every API it lists (docs/apis.md),
    and kafka-python infers exactly 4.3 from them (it keys 4.3 on DescribeLogDirs v5); told the
    version it infers, it keeps the broker's list, so each client sends the versions both serve;
    4.1-only tests (ListConfigResources) run;
  - "4.3" rather than "4.3.0": it is the exact key of kafka-python's version table, so no
    "not supported; using (4, 3)" warning in every client, and test_kafka_version_infer
    checks that ApiVersions makes kafka-python infer exactly 4.3.
Override with TWINLOG_KP_SUITE_KAFKA_VERSION to experiment; the allowlist assumes 4.3.

The SASL and SSL modules (SPAWNED_BROKER_MODULES) need a broker of their own with the listener,
users and certificates their fixture chooses; they run in a second invocation without KAFKA_URI,
where our templates, stand-in kafka-storage.sh / kafka-topics.sh (kafka_python_suite/kafka_root)
and stand-in SpawnedService start a twinlog process per fixture (see run_with_spawned_brokers).

Outcomes are recorded per node id by kafka_python_suite/outcome_recorder.py. Every node id in
kafka_python_suite/allowlist.txt must pass, or this test fails (a regression); tests that pass
without being on the allowlist are printed and raised as a warning, to be added. Tests in
kafka_python_suite/deselected.txt are never run, each for the reason written there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest

from compat_tests.helpers.broker_process import broker_kind

HERE = Path(__file__).resolve().parents[1]  # compat_tests/: kafka_python_suite/ and .deps/
HARNESS = HERE / "kafka_python_suite"
SUITE = HERE / ".deps" / "kafka-python-suite"
ALLOWLIST = HARNESS / "allowlist.txt"
DESELECTED = HARNESS / "deselected.txt"

KAFKA_VERSION = os.environ.get("TWINLOG_KP_SUITE_KAFKA_VERSION", "4.3")
PER_TEST_TIMEOUT_S = 60
# The whole CI run has 90 minutes; the suite gets at most 10 of them per storage mode.
SUITE_BUDGET_S = 600
# Modules whose fixtures start a broker of their own (SASL, SSL); ~10 s for their 11 tests.
SPAWNED_BROKER_MODULES = ("test/integration/test_sasl_integration.py",
                          "test/integration/test_ssl_integration.py")
SPAWNED_BUDGET_S = 120


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


def run_suite(workdir: Path, name: str, targets: list[str], env_extra: dict[str, str],
              deselect: list[str], budget_s: float) -> tuple[int | None, dict[str, dict], Path]:
    outcomes_path = workdir / f"{name}-outcomes.jsonl"
    output_path = workdir / f"{name}-output.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "KAFKA_URI"}
    env.update({
        "KAFKA_VERSION": KAFKA_VERSION,
        "TWINLOG_SUITE_OUTCOMES": str(outcomes_path),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HARNESS), env.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",
        **env_extra,
    })
    cmd = [sys.executable, "-m", "pytest", *targets,
           "-p", "outcome_recorder", "-p", "client_log_levels", "-p", "metadata_race_fix",
           "-p", "no:cacheprovider",
           f"--timeout={PER_TEST_TIMEOUT_S}",
           # "signal" fails just the stuck test; the suite's default "thread" exits the run.
           "--timeout-method=signal",
           "-o", "log_level=DEBUG", "-q", "-rfE", "--durations=15"]
    for nodeid in deselect:
        cmd += ["--deselect", nodeid]
    with open(output_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=SUITE, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(budget_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    records = []
    if outcomes_path.exists():
        records = [json.loads(line) for line in outcomes_path.read_text().splitlines() if line.strip()]
    return rc, final_outcomes(records), output_path


def run_against_external_broker(broker, workdir: Path):
    """Everything but SPAWNED_BROKER_MODULES, pointed at our broker through KAFKA_URI."""
    kafka_root = workdir / "kafka-root"  # the fixtures insist it exists; nothing is run from it
    kafka_root.mkdir()
    env = {"KAFKA_URI": f"kafka://{broker.host}:{broker.port}", "KAFKA_ROOT": str(kafka_root)}
    deselect = [*read_id_list(DESELECTED), *SPAWNED_BROKER_MODULES]
    return run_suite(workdir, "external", ["test/integration"], env, deselect, SUITE_BUDGET_S)


def run_with_spawned_brokers(storage_mode: str, workdir: Path):
    """SPAWNED_BROKER_MODULES without KAFKA_URI: their fixtures start a broker of their own.

    KafkaFixture renders kafka.properties and a JAAS file from PROJECT_ROOT's templates, runs
    KAFKA_ROOT/bin/kafka-storage.sh (SCRAM users) and kafka-topics.sh (--list), and launches the
    broker through test/service.py's SpawnedService: our templates, our two scripts in
    kafka_root/bin and our SpawnedService start a twinlog process with the settings the fixture
    chose (SASL_PLAINTEXT with PLAIN / SCRAM users, SSL with the certificates its keytool and
    openssl made). See kafka_python_suite/service.py.
    """
    env = {"PROJECT_ROOT": str(HARNESS), "KAFKA_ROOT": str(HARNESS / "kafka_root"),
           "TWINLOG_SUITE_STORAGE_MODE": storage_mode}
    return run_suite(workdir, "spawned", list(SPAWNED_BROKER_MODULES), env,
                     list(read_id_list(DESELECTED)), SPAWNED_BUDGET_S)


def failure_report(output: str, nodeid: str, max_lines: int = 300) -> str:
    """The failure section pytest printed for `nodeid` (its traceback and the client's captured
    logs), the last `max_lines` of it; "" when the output has none."""
    name = nodeid.rsplit("::", 1)[-1]
    header = re.compile(r"^_{3,} (.+?) _{3,}$")
    lines, section = output.splitlines(), None
    for i, line in enumerate(lines):
        match = header.match(line)
        if match and section is not None:
            return "\n".join(lines[section:i][-max_lines:])
        if match and match.group(1) == name:
            section = i
        elif section is not None and line.startswith("=" * 10):
            return "\n".join(lines[section:i][-max_lines:])
    return "\n".join(lines[section:][-max_lines:]) if section is not None else ""


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
    # Auto-created topics get 4 partitions, as on the brokers the suite starts itself (its
    # KafkaFixture's `partitions`, written to num.partitions): test_transactional_producer_offsets
    # commits an offset for partition 1 of a topic its producer auto-created, which a one-partition
    # topic answers with UNKNOWN_TOPIC_OR_PARTITION (as Kafka's TxnOffsetCommit does).
    # (Tansu, the peer broker, has a fixed node id and no such flags.)
    twinlog_args = ("--node-id", "0", "--num-partitions", "4", "--group-min-session-timeout-ms", "1000",
                    "--group-initial-rebalance-delay-ms", "0", "--authorizer", "--super-users", "User:ANONYMOUS")
    broker = broker_factory(*(twinlog_args if broker_kind() == "twinlog" else ()))
    prepare_suite()
    allowlist = read_id_list(ALLOWLIST)
    assert allowlist, f"{ALLOWLIST} is empty: nothing would be checked"

    started = time.monotonic()
    mode = getattr(broker, "storage_mode", "?")
    runs = [run_against_external_broker(broker, tmp_path)]
    if broker_kind() == "twinlog":  # the spawned brokers are twinlog processes
        runs.append(run_with_spawned_brokers(mode, tmp_path))
    elapsed = time.monotonic() - started
    outcomes = {nodeid: o for _, run_outcomes, _ in runs for nodeid, o in run_outcomes.items()}

    counts = Counter(o["outcome"] for o in outcomes.values())
    table = outcome_table(outcomes)
    (SUITE / f"last-outcomes-{mode}.txt").write_text(table + "\n")
    print(f"kafka-python {KAFKA_VERSION} suite vs {broker!r}: {dict(sorted(counts.items()))} "
          f"in {elapsed:.0f}s (exit codes {[run[0] for run in runs]})")
    print(table)
    output_tails, outputs = {}, ""
    for rc, _, output_path in runs:
        outputs += output_path.read_text(errors="replace")
        output_tail = "\n".join(output_path.read_text(errors="replace").splitlines()[-40:])
        output_tails[output_path] = output_tail
        assert broker.is_running(), f"the broker died during the suite\n{broker.log_tail(80)}"
        assert rc is not None, (
            f"suite run exceeded its budget and was killed; finished so far: "
            f"{dict(counts)}; deselect the test that hangs (see {output_path})\n{output_tail}")
        # 0: all passed; 1: some failed. 2 (interrupted), 3 (internal error), 4 (usage) and
        # 5 (nothing collected) mean the harness itself is broken.
        assert rc in (0, 1), f"suite pytest exited {rc} ({output_path})\n{output_tail}"

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
        + "".join(f"\n\nsuite output tail ({path}):\n{tail}" for path, tail in output_tails.items())
        + "".join(f"\n\n{n}, as the suite reported it:\n{failure_report(outputs, n)}" for n in sorted(regressions))
        + f"\n\nbroker log tail:\n{broker.log_tail(60)}")
