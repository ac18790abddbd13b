"""README.md and docs/ name only things that exist: files, modules, make targets, commands.

Moving a module or renaming a command leaves the manual pointing at nothing unless something
checks it; the room split of broker/ left `make serve-secure` and `make cluster` running modules
that had moved, and `from broker.testing import TwinlogBroker` failing.

The repository's own modules are found and read as files, never imported: `make test-unit` runs
this without the test extra, so spark/ (pyspark) and broker/testing/container.py
(testcontainers) cannot be imported there.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import click
import pytest

from broker.cli.main import main as twinlog

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
_REPO_PATH = re.compile(r"(?<![\w./<-])((?:wire|segment|replica|broker|compat_tests|spark|bench|docs)/[\w./-]*)")
_PYTHON_M = re.compile(r"python -m ([\w.]+)")
_MAKE = re.compile(r"\bmake ([a-z][\w-]*)")
_TWINLOG = re.compile(r"(?:^|\|\s*|`)twinlog ([a-z][\w-]*)(?: ([a-z][\w-]*))?", re.M)  # typed commands
_IMPORT = re.compile(r"^from ((?:wire|segment|replica|broker|spark)[\w.]*) import (.+)$", re.M)
_CODE = re.compile(r"```sh\n.*?```|`[^`\n]+`", re.S)  # shell blocks and inline code
_OURS = {"wire", "segment", "replica", "broker", "spark", "bench", "compat_tests"}
_MADE_BY_INSTALL_DEPS = "compat_tests/.deps/"  # the jars and suites compat_tests/install_deps.sh fetches


def _source(module: str) -> Path | None:
    """The file of one of the repository's modules (a package's __init__.py), or None."""
    path = ROOT.joinpath(*module.split("."))
    return next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.exists()), None)


def _runnable(module: str) -> bool:
    """`python -m module` would find something to run."""
    if module.split(".")[0] not in _OURS:
        return importlib.util.find_spec(module) is not None
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__main__.py").exists()


def _top_level_names(source: Path) -> set[str]:
    names: set[str] = set()
    body = list(ast.parse(source.read_text()).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, `try: import ...`
            body += node.body + node.orelse + getattr(node, "handlers", []) + getattr(node, "finalbody", [])
        elif isinstance(node, ast.ExceptHandler):
            body += node.body
    return names


def _code(text: str) -> str:
    return "\n".join(_CODE.findall(text))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_links_and_repository_paths_exist(doc):
    text = doc.read_text()
    missing = [target for target in _LINK.findall(text)
               if "://" not in target and not (doc.parent / target).exists()]
    missing += [path for path in (p.rstrip(".") for p in _REPO_PATH.findall(text))
                if not (ROOT / path).exists() and not path.startswith(_MADE_BY_INSTALL_DEPS)]
    assert not missing, f"{doc.name} points at what is not in the tree: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_python_modules_and_imports_exist(doc):
    text = doc.read_text()
    missing = [m for m in _PYTHON_M.findall(text) if not _runnable(m)]
    for module, names in _IMPORT.findall(text):
        source = _source(module)
        if source is None:
            missing.append(module)
            continue
        defined = _top_level_names(source)
        missing += [f"{module}.{n.strip()}" for n in names.split("#")[0].split(",") if n.strip() not in defined]
    assert not missing, f"{doc.name} names modules or names that do not exist: {missing}"


def test_the_makefile_runs_modules_that_exist():
    missing = [m for m in _PYTHON_M.findall((ROOT / "Makefile").read_text()) if not _runnable(m)]
    assert not missing, f"the Makefile runs modules that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_make_targets_exist(doc):
    makefile = (ROOT / "Makefile").read_text()
    missing = [t for t in _MAKE.findall(_code(doc.read_text())) if not re.search(rf"^{re.escape(t)}:", makefile, re.M)]
    assert not missing, f"{doc.name} names make targets the Makefile lacks: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_twinlog_commands_exist(doc):
    missing = []
    for name, sub in _TWINLOG.findall(_code(doc.read_text())):
        command = twinlog.commands.get(name)
        if command is None:
            missing.append(name)
        elif sub and isinstance(command, click.Group) and sub not in command.commands:
            missing.append(f"{name} {sub}")
    assert not missing, f"{doc.name} names twinlog commands that do not exist: {missing}"


def test_the_readme_names_every_room_of_broker():
    readme = (ROOT / "README.md").read_text()
    rooms = {p.name for p in (ROOT / "broker").iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {"tests"}
    listed = set(re.findall(r"^  (\w+)/ ", readme, re.M))
    assert listed == rooms, f"README's source layout lists {sorted(listed)}, broker/ has {sorted(rooms)}"
