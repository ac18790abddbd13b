"""The README's examples, run top to bottom against a real broker, as a new user would.

Every ```sh and ```python block of the README is run in order, with the broker's address for
127.0.0.1:9092 (and TWINLOG_BOOTSTRAP set for the `twinlog` commands), in the broker's work dir
so that the README's `data/...` paths name its files. The first block (`make serve`, `make
test`) is how to run this very suite, and is left out. A block fails the test with its output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compat_tests.helpers.broker_process import BrokerProcess, broker_kind

pytestmark = pytest.mark.skipif(broker_kind() != "twinlog", reason="twinlog's own README")

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```", re.M | re.S)


def readme_blocks() -> list[tuple[str, str]]:
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    return [(kind, code) for kind, code in blocks if "make " not in code]


def test_the_readme_blocks_are_the_ones_this_test_knows():
    assert [kind for kind, _ in readme_blocks()] == ["sh", "python", "sh"]


def test_every_readme_example_works_top_to_bottom(tmp_path):
    broker = BrokerProcess(workdir=tmp_path / "broker")
    env = {**os.environ, "TWINLOG_BOOTSTRAP": broker.bootstrap,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        broker.start()
        for kind, code in readme_blocks():
            code = code.replace("127.0.0.1:9092", broker.bootstrap)
            command = ["bash", "-euo", "pipefail", "-c", code] if kind == "sh" else [sys.executable, "-c", code]
            done = subprocess.run(command, cwd=broker.workdir, env=env, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, f"{kind} block failed ({done.returncode}):\n{code}\n{done.stdout}\n{done.stderr}"
    finally:
        broker.stop()
