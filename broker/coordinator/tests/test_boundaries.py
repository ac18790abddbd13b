"""The coordinators do not import each other: txn/ knows nothing of groups/ (a replicated
marker reaches the groups through the listener broker/broker.py registers), and the runtime
knows neither (the shards plug into it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BROKER = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("package, forbidden", [
    ("txn", ("broker.groups",)),
    ("coordinator", ("broker.groups", "broker.txn")),
])
def test_a_coordinator_package_imports_no_other(package, forbidden):
    crossing = {f"{path.relative_to(BROKER.parent)}: {name}"
                for path in (BROKER / package).rglob("*.py") if "tests" not in path.parts
                for name in _imports(path) if name.startswith(forbidden)}
    assert not crossing
