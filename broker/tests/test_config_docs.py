"""docs/configuration.md is what `twinlog config docs` prints from the settings table."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from broker.cli.main import main
from broker.settings.config_docs import configuration_markdown
from broker.settings.table import SETTINGS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_docs_configuration_md_is_generated_from_the_table():
    assert DOCS.read_text(encoding="utf-8") == configuration_markdown(), \
        "docs/configuration.md is stale: run `twinlog config docs > docs/configuration.md`"


def test_twinlog_config_docs_prints_every_setting_and_topic_config():
    out = CliRunner().invoke(main, ["config", "docs"])
    assert out.exit_code == 0 and out.output == configuration_markdown()
    rows = [line for line in out.output.splitlines() if line.startswith("| `")]
    assert sorted(row.split("`")[1] for row in rows) == sorted(
        [s.name for s in SETTINGS if s.flag is not None] + [s.topic for s in SETTINGS if s.topic]
        + [s.group for s in SETTINGS if s.group])
