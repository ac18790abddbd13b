"""The Java client JVMs' class data sharing archive (helpers/jvm.py) holds up: it is mapped, it
is built once when workers race for it, and a JVM given a stale or missing archive still runs
with its stdout clean. No broker: ClientCheck answers "version" without one.

A JVM that cannot map its archive says so only in a warning and runs on, slower; without these
checks a broken archive would cost CPU in every Java test and fail none.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

from compat_tests.helpers import jvm
from compat_tests.helpers.java_client import WARM_UP_CLASS, check_command

VERSION_REQUEST = json.dumps({"id": 1, "op": "version"}) + "\n"
ARCHIVED = "source: shared objects file (top)"


def _with_archive(command: list[str], archive: Path) -> list[str]:
    return [f"-XX:SharedArchiveFile={archive}" if arg.startswith("-XX:SharedArchiveFile=") else arg for arg in command]


def _ask_version(command: list[str], *extra_options: str) -> subprocess.CompletedProcess:
    """Run `command` (a ClientCheck command line) with `extra_options` before its -cp."""
    at = command.index("-cp")
    return subprocess.run([*command[:at], *extra_options, *command[at:]], input=VERSION_REQUEST,
                          capture_output=True, text=True, timeout=60)


def _assert_answers(run: subprocess.CompletedProcess) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert [json.loads(line) for line in run.stdout.splitlines()] == [{"id": 1, "ok": True, "result": "4.3.0"}]


def test_a_client_jvm_maps_the_kafka_client_classes_from_the_archive():
    command = check_command("ClientCheck", jvm.UNREACHABLE_BOOTSTRAP)
    # -Xshare:on turns "cannot map the archive" from a warning into a failed start
    run = _ask_version(command, "-Xshare:on", "-Xlog:class+load=info:stderr")
    _assert_answers(run)
    # lines like "[0.05s][info][class,load] Json source: shared objects file (top)": a class of
    # the checks' jar and one of kafka-clients' that the training run loaded too
    archived = {line.split("] ")[-1].split()[0] for line in run.stderr.splitlines() if ARCHIVED in line}
    assert {"Json", "org.apache.kafka.common.utils.AppInfoParser"} <= archived, run.stderr[-3000:]


def test_racing_workers_train_the_archive_once(tmp_path, monkeypatch):
    command = check_command("ClientCheck", jvm.UNREACHABLE_BOOTSTRAP)
    cp = command[command.index("-cp") + 1]
    monkeypatch.setattr(jvm, "ARCHIVE_DIR", tmp_path)
    trainings, real_train = [], jvm._train
    monkeypatch.setattr(jvm, "_train", lambda *a: trainings.append(a) or real_train(*a))
    found: list[Path | None] = []
    # each thread opens the lock file itself, as each xdist worker process does
    racers = [threading.Thread(target=lambda: found.append(jvm._build_archive(cp, WARM_UP_CLASS)))
              for _ in range(3)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(180)
    assert len(trainings) == 1
    assert found == [jvm.archive_path(cp, WARM_UP_CLASS)] * 3
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".jsa", ".lock"]  # no partial archive left
    _assert_answers(_ask_version(_with_archive(command, found[0]), "-Xshare:on"))


def test_a_changed_jar_names_a_new_archive(tmp_path):
    jar = tmp_path / "some.jar"
    jar.write_bytes(b"PK")
    before = jvm.archive_path(str(jar), WARM_UP_CLASS)
    os.utime(jar, ns=(0, 0))
    assert jvm.archive_path(str(jar), WARM_UP_CLASS) != before


def test_a_jvm_with_a_stale_or_missing_archive_runs_and_warns_on_stderr_only(tmp_path):
    command = check_command("ClientCheck", jvm.UNREACHABLE_BOOTSTRAP)
    cp = command[command.index("-cp") + 1].split(os.pathsep)
    # stale: the archive of another classpath, here the same entries in another order
    stale = list(command)
    stale[command.index("-cp") + 1] = os.pathsep.join([cp[-1], *cp[:-1]])
    run = _ask_version(stale)
    _assert_answers(run)
    assert "[warning][cds" in run.stderr, run.stderr[-3000:]
    _assert_answers(_ask_version(_with_archive(command, tmp_path / "missing.jsa")))
