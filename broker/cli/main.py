"""`twinlog` command line: `twinlog serve` runs a broker until SIGTERM/SIGINT.

Only what the options' defaults need is imported here; the broker itself (the codec, both
storage engines, asyncio) is imported when `serve` runs, so `twinlog --help` and `--version`
answer at once.
"""

from __future__ import annotations

import logging
import sys

import click

from broker.cli.acls import acls_group
from broker.cli.cluster import cluster_group
from broker.cli.config import config_group
from broker.cli.consume import consume_command
from broker.cli.dump import dump_command
from broker.cli.groups import groups_group
from broker.cli.produce import produce_command
from broker.cli.quotas import quotas_group
from broker.cli.topics import topics_group
from broker.cli.users import users_group
from broker.observability.log_rate_limit import install as limit_repeated_log_lines
from broker.cli.lookup import lookup_command
from broker.settings.serve_options import resolved_settings, setting_options


@click.group()
@click.version_option(package_name="twinlog", prog_name="twinlog")
def main() -> None:
    """twinlog: a Kafka-compatible broker with two storage layouts."""
    # The codec (kio) registers Hypothesis strategies whenever Hypothesis can be imported, which
    # builds Hypothesis's Unicode table (1.6 s of CPU) and leaves a `.hypothesis/` directory in
    # the working directory. A command never uses Hypothesis; in an environment that has it (a
    # test venv) every broker start paid that. None in sys.modules makes the import fail at once.
    sys.modules.setdefault("hypothesis", None)


@main.command("serve")
@setting_options
@click.pass_context
def serve_command(ctx: click.Context, **params) -> None:
    """Run a broker. Every setting comes from its flag, else its TWINLOG_* environment variable
    (Kafka's name in capitals, dots as underscores: TWINLOG_LOG_SEGMENT_BYTES), else the
    --config file (a Kafka server.properties), else its default: `twinlog config show` prints
    what each resolves to."""
    from broker.settings.config_from_settings import broker_config

    config, process = broker_config(resolved_settings(ctx, params))  # before logging: a bad value is one line
    logging.basicConfig(level=process["log_level"], format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    limit_repeated_log_lines()  # a misbehaving client must not fill the disk with log lines
    import asyncio

    from broker.lifecycle import run

    asyncio.run(run(config))


# The client commands import only click at load time (their modules load the rest when run).
for command in (config_group, topics_group, produce_command, consume_command, groups_group, cluster_group,
                acls_group, users_group, quotas_group, dump_command, lookup_command):
    main.add_command(command)


if __name__ == "__main__":
    main()
