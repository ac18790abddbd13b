"""serve's options, generated from the settings table, and the settings they resolve to.

Every option is declared with no default: click only reports what the command line gave, and
sources.resolve puts the environment, the `--config` file and the table's defaults
under it. Values reach the commands as raw text and are parsed by the table's kinds, so a bad
value is one line naming the key (`Error: invalid value for log.segment.bytes (from
--segment-bytes): 'x' is not an integer`) and exit code 2, wherever it came from.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.core import ParameterSource

from broker.settings.sources import ConfigFile, Resolved, SettingError, read_config_file, resolve
from broker.settings.kinds import Bool, Items
from broker.settings.setting import Setting
from broker.settings.table import BROKER_SETTINGS


class SettingUsageError(click.ClickException):
    """One 'Error: ...' line (no usage text), exit code 2 as click's usage errors."""

    exit_code = 2


def _help(setting: Setting) -> str:
    shown = setting.kind.show(setting.default)
    default = f" [default: {shown}]" if shown and "[default:" not in setting.doc else ""
    names = setting.name + (f"; the default of topic config {setting.topic}" if setting.topic else "")
    return f"{setting.doc} ({names}){default}"


def _option(setting: Setting):
    flag = "--" + setting.flag
    common = dict(help=_help(setting), default=None)
    if isinstance(setting.kind, Bool):
        names = [f"{flag}/--no-{setting.flag}" if setting.negatable else flag, setting.param_name]
        return click.option(*names, is_flag=True, **common)
    if isinstance(setting.kind, Items):
        return click.option(flag, setting.param_name, multiple=True, metavar=setting.kind.metavar, **common)
    return click.option(flag, setting.param_name, metavar=setting.kind.metavar, **common)


CONFIG_OPTION = click.option(
    "--config", "config_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
    help="A Kafka server.properties with Kafka's keys (log.segment.bytes=...); flags and "
         "TWINLOG_* environment variables override it, unknown keys are skipped with a warning.")


def setting_options(command):
    """Adds `--config` and one option per setting, in the table's order."""
    for option in reversed([CONFIG_OPTION] + [_option(s) for s in BROKER_SETTINGS]):
        command = option(command)
    return command


def resolved_settings(ctx: click.Context, params: dict) -> dict[str, Resolved]:
    """The settings from this command's parameters (flag) over the environment over the
    `--config` file over the defaults. Raises SettingUsageError (one line, exit 2)."""
    given = {name: value for name, value in params.items()
             if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE}
    config_file: ConfigFile | None = None
    try:
        if params.get("config_file") is not None:
            config_file = read_config_file(params["config_file"])
        resolved = resolve(given, os.environ, config_file)
    except SettingError as exc:
        raise SettingUsageError(str(exc)) from None
    for key in config_file.unknown if config_file else ():
        click.echo(f"Warning: {config_file.path}: '{key}' is not a twinlog setting; skipped", err=True)
    return resolved
