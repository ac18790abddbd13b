"""What the `twinlog` client commands share: the connection (client_settings.py), one-line
errors, the error check of an answer, flags that exclude each other, and rich tables.

Importing this costs click alone: the client, the codec and rich load when a command runs, so
`twinlog --help` stays fast.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click
from click.core import ParameterSource


@contextlib.contextmanager
def kafka_client(settings) -> Iterator:
    """A KafkaClient connected as `settings` say; a ClientError becomes a one-line error and exit status 1."""
    from broker.cli.kafka_client import ClientError, KafkaClient

    try:
        with KafkaClient(settings.bootstrap, settings.client_id, settings.timeout_ms / 1000,
                         security=settings) as client:
            yield client
    except ClientError as exc:
        raise click.ClickException(str(exc)) from None


def exclusive(ctx: click.Context, *names: str) -> None:
    """Refuse (usage error, exit 2) a command line giving more than one of the options `names`
    (parameter names), as kafka-consumer-groups refuses two reset targets."""
    given = [name for name in names if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)]
    if len(given) > 1:
        flags = {p.name: p.opts[0] for p in ctx.command.params}
        raise click.UsageError(f"{' and '.join(flags[p] for p in given)} cannot be used together")


def check(error_code, what: str, message: str | None = None) -> None:
    """Fail the command with Kafka's error name when an answer's error code is not NONE."""
    if error_code.value != 0:
        detail = f": {message}" if message else ""
        raise click.ClickException(f"{what}: {error_code.name.upper()}{detail}")


def print_table(title: str | None, columns: list[str], rows: list[list]) -> None:
    """A rich table on stdout; plain text (no colours, no box art) when stdout is not a terminal,
    so scripts and tests read whole lines."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console()
    plain = not console.is_terminal
    table = Table(title=None if plain else title, box=None if plain else box.SIMPLE_HEAD,
                  show_edge=not plain, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=plain)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    if plain:
        console = Console(width=10_000, no_color=True, highlight=False)
        if title:
            console.print(title, highlight=False)
    console.print(table)


def parse_assignments(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    """KEY=VALUE options as a dict."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint=what)
        out[key] = value
    return out
