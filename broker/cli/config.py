"""`twinlog config show`: each broker setting's effective value and where it came from;
`twinlog config docs`: docs/configuration.md, from the settings table.

`show` takes serve's options (the same table, broker/settings/table.py), so `twinlog config
show --config server.properties --segment-bytes 1048576` answers what `twinlog serve` with those
arguments and this environment would run with, without starting it. Sensitive values are hidden.
"""

from __future__ import annotations

import click

from broker.settings.serve_options import resolved_settings, setting_options


@click.group("config")
def config_group() -> None:
    """Broker settings: flag > TWINLOG_* environment > --config file > default."""


@config_group.command("show")
@setting_options
@click.pass_context
def show_command(ctx: click.Context, **params) -> None:
    """Print every setting's effective value and its source."""
    resolved = resolved_settings(ctx, params)
    rows = []
    for name, r in resolved.items():
        value = "<sensitive>" if r.setting.sensitive and r.source != "default" else r.setting.kind.show(r.value)
        rows.append((name, value or "(none)", r.source + (f" {r.origin}" if r.origin else "")))
    widths = [max(len(row[0]) for row in rows), min(40, max(len(row[1]) for row in rows))]
    for name, value, source in rows:
        click.echo(f"{name:<{widths[0]}}  {value:<{widths[1]}}  {source}".rstrip())


@config_group.command("docs")
def docs_command() -> None:
    """Print docs/configuration.md: every broker setting and topic config, from the settings table."""
    from broker.settings.config_docs import configuration_markdown

    click.echo(configuration_markdown(), nl=False)
