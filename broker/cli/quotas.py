"""`twinlog quotas describe|alter`: client quotas over the Kafka protocol (DescribeClientQuotas,
AlterClientQuotas; KIP-546), as `kafka-configs --entity-type users/clients/ips` manages them:

    twinlog quotas alter --clients app --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    twinlog quotas alter --users alice --clients-default --delete-config request_percentage
    twinlog quotas describe --users alice         # that entity exactly (user alice, no client-id)
    twinlog quotas describe                       # every entity with a quota

An entity is a user, a client-id, both, or an ip; `--users-default` / `--clients-default` /
`--ips-default` name the default entity (kafka-configs' --entity-default). The options are
kafka-configs' entity types because --user is the name this command logs in with.
"""

from __future__ import annotations

import click

from broker.cli.client_settings import client_options
from broker.cli.options import check, kafka_client, print_table
from broker.cli.output import emit, format_option

_EXACT, _DEFAULT = 0, 1


def _entity_options(command):
    # kafka-configs' entity types (users, clients, ips) name the options: --user is the login's
    for flag, param, what in reversed((("--users", "users", "user"), ("--clients", "clients", "client-id"),
                                       ("--ips", "ips", "ip"))):
        command = click.option(f"{flag}-default", f"{param}_default", is_flag=True,
                               help=f"The default {what} entity.")(command)
        command = click.option(flag, param, default=None, help=f"The {what} entity's name.")(command)
    return command


def _entity(user, user_default, client_id, client_id_default, ip, ip_default) -> dict[str, str | None]:
    """{entity type: name, None for the default}, from the command line's entity options."""
    out: dict[str, str | None] = {}
    for entity_type, name, default, flag in (("user", user, user_default, "--users"),
                                             ("client-id", client_id, client_id_default, "--clients"),
                                             ("ip", ip, ip_default, "--ips")):
        if name is not None and default:
            raise click.UsageError(f"{flag} and {flag}-default cannot be used together")
        if name is not None or default:
            out[entity_type] = name
    return out


def _parse_config(values: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for value in values:
        for pair in filter(None, value.split(",")):
            key, sep, number = pair.partition("=")
            try:
                out[key.strip()] = float(number)
            except ValueError:
                raise click.BadParameter(f"{pair!r} is not KEY=NUMBER", param_hint="--add-config") from None
            if not sep:
                raise click.BadParameter(f"{pair!r} is not KEY=NUMBER", param_hint="--add-config")
    return out


@click.group("quotas")
def quotas_group() -> None:
    """Describe and alter client quotas (users, client-ids, ips)."""


@quotas_group.command("describe")
@_entity_options
@format_option
@client_options
def describe_command(users, users_default, clients, clients_default, ips, ips_default, output_format,
                     connection) -> None:
    """Quotas of the entity given (exactly), or of every entity."""
    entity = _entity(users, users_default, clients, clients_default, ips, ips_default)
    components = [{"entity_type": t, "match_type": _EXACT if n is not None else _DEFAULT, "match": n}
                  for t, n in entity.items()]
    with kafka_client(connection) as client:
        answer = client.call(48, components=components, strict=bool(entity))
    check(answer.error_code, "DescribeClientQuotas", answer.error_message)
    rows = [{"entity": {e.entity_type: e.entity_name for e in x.entity},
             "quotas": {v.key: v.value for v in x.values}} for x in answer.entries]
    rows.sort(key=lambda r: sorted((t, n or "") for t, n in r["entity"].items()))
    emit(output_format, rows, lambda: print_table("client quotas", ["ENTITY", "QUOTA", "VALUE"], [
        [_describe_entity(r["entity"]), key, _number(value)]
        for r in rows for key, value in sorted(r["quotas"].items())]))


@quotas_group.command("alter")
@_entity_options
@click.option("--add-config", "add", multiple=True, help="KEY=VALUE[,KEY=VALUE...] quotas to set.")
@click.option("--delete-config", "delete", multiple=True, help="KEY[,KEY...] quotas to remove.")
@click.option("--validate-only", is_flag=True, help="Check with the broker, change nothing.")
@client_options
def alter_command(users, users_default, clients, clients_default, ips, ips_default, add, delete, validate_only,
                  connection) -> None:
    """Set (--add-config) or remove (--delete-config) quotas of one entity."""
    entity = _entity(users, users_default, clients, clients_default, ips, ips_default)
    if not entity:
        raise click.UsageError("name an entity: --users, --clients, --ips or their -default flags")
    added = _parse_config(add)
    removed = [k.strip() for value in delete for k in value.split(",") if k.strip()]
    if not added and not removed:
        raise click.UsageError("give --add-config or --delete-config")
    ops = [{"key": k, "value": v, "remove": False} for k, v in added.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in removed]
    with kafka_client(connection) as client:
        answer = client.call(49, validate_only=validate_only, entries=[{
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()], "ops": ops}])
    (result,) = answer.entries
    check(result.error_code, f"alter quotas of {_describe_entity(entity)}", result.error_message)
    click.echo(f"{'validated' if validate_only else 'altered'} quotas of {_describe_entity(entity)}")


def _describe_entity(entity: dict) -> str:
    return ", ".join(f"{t}={n if n is not None else '<default>'}" for t, n in sorted(entity.items()))


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)
