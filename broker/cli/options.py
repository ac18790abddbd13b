"""What the `twinlog` client commands share: the --bootstrap-server option, one-line errors,
the error check of an answer, and rich tables.

Importing this costs click and the settings table (which `twinlog serve`'s options load
anyway): the client, the codec and rich load when a command runs, so `twinlog --help` stays fast.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from broker.settings.table import BY_NAME

DEFAULT_BOOTSTRAP = f"localhost:{BY_NAME['port'].default}"  # a broker serving with the default port

bootstrap_option = click.option(
    "--bootstrap-server", "-b", "bootstrap", envvar="TWINLOG_BOOTSTRAP", default=DEFAULT_BOOTSTRAP,
    show_default=True, show_envvar=True, help="A broker of the cluster, host:port (a comma-separated list works).")


@contextlib.contextmanager
def kafka_client(bootstrap: str) -> Iterator:
    """A connected KafkaClient; a ClientError becomes a one-line error and exit status 1."""
    from broker.cli.kafka_client import ClientError, KafkaClient

    try:
        with KafkaClient(bootstrap) as client:
            yield client
    except ClientError as exc:
        raise click.ClickException(str(exc)) from None


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
