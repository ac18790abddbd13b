"""`--format text|json|yaml` of the listing and describing commands.

A command builds one document (plain dicts, lists, strings and numbers) and says how to print
it as text; json and yaml print the document alone on stdout, so `twinlog topics list --format
json | jq` reads nothing else. Errors stay one `Error:` line on stderr with exit status 1 in
every format, and a command that fails after printing prints its document first (as `topics
create` does for the topics that were created).
"""

from __future__ import annotations

from collections.abc import Callable

import click

FORMATS = ("text", "json", "yaml")

format_option = click.option("--format", "output_format", type=click.Choice(FORMATS), default="text",
                             show_default=True, help="text for people; json or yaml for programs.")


def emit(output_format: str, document, text: Callable[[], None]) -> None:
    """Print `document` as json or yaml, or call `text` to print it for people."""
    if output_format == "json":
        import json

        click.echo(json.dumps(document, indent=2))
    elif output_format == "yaml":
        import yaml

        click.echo(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), nl=False)
    else:
        text()


def emit_outcomes(output_format: str, title: str, column: str, outcomes: list[tuple[str, str | None]],
                  failure: str) -> None:
    """The per-name results of a create or delete, (name, None) or (name, error): printed, then
    exit status 1 naming the ones that failed ("2 topic(s) not created: a, b")."""
    from broker.cli.options import print_table

    emit(output_format, [{"name": name, "error": error} for name, error in outcomes], lambda: print_table(
        title, [column, "STATUS"], [[name, error or "OK"] for name, error in outcomes]))
    failed = [name for name, error in outcomes if error]
    if failed:
        raise click.ClickException(f"{len(failed)} {failure}: {', '.join(failed)}")
