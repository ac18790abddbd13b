"""pytest plugin loaded (-p outcome_recorder) into the kafka-python suite's own pytest run.

It appends one JSON line per collect/setup/call/teardown report, and one per deselected item,
to the file named by $TWINLOG_SUITE_OUTCOMES. Node ids come straight from pytest, so the
allowlist compares exactly what `pytest <nodeid>` would run; a junit XML round trip would
have to rebuild them from class names. Lines are flushed one by one: if the run is killed
for going over its budget, everything that finished is still on disk.
"""

import json
import os


def _write(record):
    path = os.environ.get("TWINLOG_SUITE_OUTCOMES")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def _reason(report):
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # skips: (path, lineno, message)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0][:300] if crash.message else ""
    return str(longrepr).strip().splitlines()[-1][:300] if str(longrepr).strip() else ""


def pytest_runtest_logreport(report):
    _write({
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "wasxfail": hasattr(report, "wasxfail"),
        "duration": round(report.duration, 3),
        "reason": _reason(report) if report.outcome != "passed" else "",
    })


def pytest_collectreport(report):
    if report.failed:
        _write({"nodeid": report.nodeid, "when": "collect", "outcome": "failed",
                "wasxfail": False, "duration": 0.0, "reason": _reason(report)})


def pytest_deselected(items):
    for item in items:
        _write({"nodeid": item.nodeid, "when": "deselect", "outcome": "deselected",
                "wasxfail": False, "duration": 0.0, "reason": ""})
