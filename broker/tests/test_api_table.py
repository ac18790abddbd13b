"""docs/apis.md lists exactly what the broker serves, and each API has a handler."""

from __future__ import annotations

import pytest

from wire.protocol import SERVED_VERSIONS

from broker.api.api_table import BEGIN, DOC, END, markdown_table, with_table
from broker.api.routes import HANDLERS


def test_docs_apis_md_holds_the_current_table():
    doc = DOC.read_text()
    assert with_table(doc) == doc, "docs/apis.md is stale: run `python -m broker.api.api_table`"


def test_every_served_api_has_a_handler_and_every_handler_is_served():
    # A served key without a handler would pass ApiVersions and then fail its first request.
    assert set(HANDLERS) == set(SERVED_VERSIONS)


def test_the_table_has_a_row_per_served_api_with_its_versions():
    rows = [line.split(" | ") for line in markdown_table().splitlines()[2:]]
    listed = {int(cells[0].lstrip("| ")): cells[2].split(" ")[0] for cells in rows}
    assert listed == {key: f"{lo}–{hi}" if lo != hi else f"{lo}" for key, (lo, hi) in SERVED_VERSIONS.items()}


def test_with_table_replaces_only_what_lies_between_the_markers():
    doc = f"# APIs\n\nBefore.\n\n{BEGIN}\n| an old table |\n{END}\n\nAfter.\n"
    updated = with_table(doc)
    assert updated == f"# APIs\n\nBefore.\n\n{BEGIN}\n{markdown_table()}\n{END}\n\nAfter.\n"
    assert with_table(updated) == updated


def test_with_table_refuses_a_document_without_the_markers():
    with pytest.raises(ValueError, match="markers"):
        with_table("# APIs\n\n| a hand-made table |\n")
