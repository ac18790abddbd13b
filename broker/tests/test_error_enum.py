"""Kafka's errors travel as wire.error_codes.ErrorCode members, never as their names.

A name ("not_coordinator") is a typo that fails only when its path runs, and a mix of names and
members compares unequal without a word. The source is read, not run: every `ErrorCode.x` must
name a member (so a typo fails here, with its file and line), and no string literal may spell a
member's name (wherever it sits: a name tucked in a tuple a comprehension builds travels as far
as one handed to a call), nor may an ErrorCode.x.name be taken as a value.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from wire.error_codes import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "replica", "segment", "wire")
NAMES = frozenset(ErrorCode.__members__)
# The same spelling meaning something else than an error.
NOT_ERRORS = {
    "broker/security/tls_config.py": {"none"},  # ssl.client.auth=none
    "broker/settings/security_rows.py": {"none"},  # its default
    "broker/settings/config_docs.py": {"none"},  # a setting without a default
    "broker/observability/console/login.py": {"none"},  # Sec-Fetch-Site: none
    "broker/cli/client_settings.py": {"none"},  # ssl.endpoint.identification.algorithm
    "broker/cli/dump.py": {"none"},  # compression type 0
    "broker/cli/cluster.py": {"none"},  # a partition without a leader, as printed
}


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/tests/" not in relative and "/testing/" not in relative:
                yield relative, ast.parse(path.read_text(), relative)


def _names_passed(tree) -> list[ast.AST]:
    """Error names in the source: string literals spelling one, and ErrorCode.x.name taken as a value."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "name" and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "ErrorCode"):
            found.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
            found.append(node)
    return found


@cache
def _findings() -> tuple[list[str], list[str]]:
    """(ErrorCode.x naming no member, error names passed), each file parsed once for both tests: the
    parse is most of their CPU. Trees are dropped file by file, not kept for the second test (the
    collector would walk millions of live nodes at every collection)."""
    unknown, named = [], []
    for path, tree in _sources():
        unknown += [f"{path}:{node.lineno} ErrorCode.{node.attr}" for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "ErrorCode" and node.attr not in NAMES]
        named += [f"{path}:{node.lineno} {ast.unparse(node)}" for node in _names_passed(tree)
                  if getattr(node, "value", None) not in NOT_ERRORS.get(path, ())]
    return unknown, named


def test_every_error_code_named_in_the_source_exists():
    unknown, _named = _findings()
    assert unknown == []


def test_no_error_travels_by_its_name():
    _unknown, named = _findings()
    assert named == []


def test_the_scan_sees_a_name_passed():
    tree = ast.parse('def f(code):\n    if code == "none":\n        return "not_coordinator"\n'
                     '    waiter.set_result(ErrorCode.rebalance_in_progress.name)\n'
                     '    parts = [(p, "unknown_topic_id", None) for p in code]\n'
                     '    raise TopicError("invalid_topic_exception", "m")\n')
    assert sorted(ast.unparse(n) for n in _names_passed(tree)) == [
        "'invalid_topic_exception'", "'none'", "'not_coordinator'", "'unknown_topic_id'",
        "ErrorCode.rebalance_in_progress.name"]
