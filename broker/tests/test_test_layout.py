"""No test module imports another; shared helpers live in a helpers module.

A test module imported by another is found only through the directory pytest puts on sys.path
(`from test_x import`) or is loaded a second time under its package name beside pytest's copy
(`from wire.tests.test_x import`); either way the importer is tied to a file whose tests may move
or go, and which of its names are shared is hidden. What tests share goes in a module beside them
whose name says what it holds (segment/tests/segment_batches.py, segment/tests/cleaner_checks.py,
wire/tests/produced_records.py), imported by its package path.

The source is read, not run: every import in every test_*.py git lists (tracked, or new and not
ignored), at the top or inside a function, is checked, whatever its form (`import test_x`,
`from test_x import y`, `from a.tests.test_x import y`, `from a.tests import test_x`,
`from . import test_x`).
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _is_test_module(dotted: str) -> bool:
    return dotted.rsplit(".", 1)[-1].startswith("test_")


def imported_test_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import in `tree` that names a test module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.module and _is_test_module(node.module):
                found.append((node.lineno, module))
            else:  # `from pkg.tests import test_x`: the imported name is itself a module
                prefix = module if module.endswith(".") else module + "."
                found += [(node.lineno, prefix + alias.name) for alias in node.names if _is_test_module(alias.name)]
    return sorted(found)


def tracked_test_modules() -> list[str]:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                             "*.py"], capture_output=True, check=True)
    names = sorted(set(listed.stdout.decode().split("\0")) - {""})
    return [name for name in names if Path(name).name.startswith("test_") and (ROOT / name).exists()]


def test_no_test_module_imports_another():
    modules = tracked_test_modules()
    assert len(modules) > 200, modules  # the walk found the suite, not an empty listing
    offences = [f"{name}:{line} imports {module}"
                for name in modules
                for line, module in imported_test_modules(ast.parse((ROOT / name).read_text(), name))]
    assert offences == [], "move what they share into a helpers module beside them:\n" + "\n".join(offences)


def test_every_form_of_importing_a_test_module_is_caught():
    source = ("import test_a\n"
              "import os, pkg.tests.test_b as b\n"
              "from test_c import x\n"
              "from pkg.tests.test_d import (\n    y,\n    z,\n)\n"
              "from pkg.tests import test_e, helpers\n"
              "from . import test_f\n"
              "from .test_g import w\n"
              "def f():\n    from test_h import v\n"
              "import testing, pkg.tests.helpers\n"
              "from pkg.tests.segment_batches import make_batch\n"
              "from pkg import tests\n")
    assert imported_test_modules(ast.parse(source)) == [
        (1, "test_a"), (2, "pkg.tests.test_b"), (3, "test_c"), (4, "pkg.tests.test_d"), (8, "pkg.tests.test_e"),
        (9, ".test_f"), (10, ".test_g"), (12, "test_h"),
    ]
