"""`twinlog users create|alter|delete|list`: SCRAM users over the Kafka protocol
(AlterUserScramCredentials, DescribeUserScramCredentials; KIP-554), as `kafka-configs
--entity-type users` and `rpk security user` manage them.

The new password never leaves this process: as Kafka's admin client does, the command draws a
salt, computes SaltedPassword = PBKDF2(password, salt, iterations) (wire/scram.py) and sends
those; the broker keeps only the keys derived from them. `--new-password` names the user's
password because `--password` is the one this command logs in with (client_settings.py).

    create  refuses a user who already has a credential for the mechanism (exit 1): alter replaces one
    alter   refuses a user who has none for the mechanism
    delete  the user's credentials for each --mechanism, by default every one the user has
    list    users with their mechanisms and iterations
"""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from wire.scram import MAX_ITERATIONS, SCRAM_MECHANISMS

from broker.cli.client_settings import client_options
from broker.cli.options import check, exclusive, kafka_client, print_table
from broker.cli.output import emit, format_option

_SALT_BYTES = 32
_MIN_ITERATIONS = max(minimum for _h, _t, minimum in SCRAM_MECHANISMS.values())
_MECHANISM_BY_TYPE = {kind: name for name, (_h, kind, _m) in SCRAM_MECHANISMS.items()}


@click.group("users")
def users_group() -> None:
    """Create, alter, delete and list SCRAM users."""


def _credentials(client, users: list[str] | None) -> dict[str, dict[str, int]]:
    """user -> {mechanism: iterations} for `users` (None: everyone); a user without any is absent."""
    answer = client.call(50, users=None if users is None else [{"name": u} for u in users])
    check(answer.error_code, "DescribeUserScramCredentials", answer.error_message)
    out = {}
    for r in answer.results:
        if r.error_code.name.upper() == "RESOURCE_NOT_FOUND":
            continue
        check(r.error_code, f"DescribeUserScramCredentials {r.user}", r.error_message)
        out[r.user] = {_MECHANISM_BY_TYPE.get(c.mechanism, str(c.mechanism)): c.iterations for c in r.credential_infos}
    return out


def _upsert_options(command):
    for option in reversed((
            click.option("--new-password", default=None, help="The user's password."),
            click.option("--new-password-file", type=click.Path(exists=True, dir_okay=False), default=None,
                         help="A file whose first line is the user's password."),
            click.option("--mechanism", type=click.Choice(list(SCRAM_MECHANISMS)), default="SCRAM-SHA-256",
                         show_default=True),
            click.option("--iterations", type=click.IntRange(_MIN_ITERATIONS, MAX_ITERATIONS), default=_MIN_ITERATIONS,
                         show_default=True, help="PBKDF2 iterations."),
            click.pass_context)):
        command = option(command)
    return command


def _upsert(ctx, name: str, new_password, new_password_file, mechanism: str, iterations: int, connection,
            exists: bool) -> None:
    from wire.scram import salted_password

    exclusive(ctx, "new_password", "new_password_file")
    if new_password_file is not None:
        lines = Path(new_password_file).read_text().splitlines()
        new_password = lines[0] if lines else ""
    if not new_password:
        raise click.UsageError("give the user's password: --new-password or --new-password-file")
    hash_name, kind, _minimum = SCRAM_MECHANISMS[mechanism]
    salt = secrets.token_bytes(_SALT_BYTES)
    with kafka_client(connection) as client:
        has = mechanism in _credentials(client, [name]).get(name, {})
        if has != exists:
            raise click.ClickException(f"user {name} {'has no' if exists else 'already has a'} {mechanism} "
                                       f"credential: use `twinlog users {'create' if exists else 'alter'}`")
        answer = client.call(51, deletions=[], upsertions=[{
            "name": name, "mechanism": kind, "iterations": iterations, "salt": salt,
            "salted_password": salted_password(hash_name, new_password, salt, iterations)}])
    (result,) = answer.results
    check(result.error_code, f"{'alter' if exists else 'create'} user {name}", result.error_message)
    click.echo(f"{'altered' if exists else 'created'} user {name} ({mechanism}, {iterations} iterations)")


@users_group.command("create")
@click.argument("name")
@_upsert_options
@client_options
def create_command(ctx, name, new_password, new_password_file, mechanism, iterations, connection) -> None:
    """Create SCRAM user NAME."""
    _upsert(ctx, name, new_password, new_password_file, mechanism, iterations, connection, exists=False)


@users_group.command("alter")
@click.argument("name")
@_upsert_options
@client_options
def alter_command(ctx, name, new_password, new_password_file, mechanism, iterations, connection) -> None:
    """Set a new password for SCRAM user NAME."""
    _upsert(ctx, name, new_password, new_password_file, mechanism, iterations, connection, exists=True)


@users_group.command("delete")
@click.argument("names", nargs=-1, required=True)
@click.option("--mechanism", "mechanisms", multiple=True, type=click.Choice(list(SCRAM_MECHANISMS)),
              help="Delete only this mechanism's credential (repeatable; default: all the user has).")
@client_options
def delete_command(names, mechanisms, connection) -> None:
    """Delete SCRAM users NAMES."""
    with kafka_client(connection) as client:
        known = _credentials(client, list(names))
        missing = [n for n in names if not set(mechanisms or known.get(n, {})) & set(known.get(n, {}))]
        if missing:
            raise click.ClickException(f"no such user (or mechanism): {', '.join(missing)}")
        deletions = [{"name": n, "mechanism": SCRAM_MECHANISMS[m][1]} for n in names
                     for m in (mechanisms or known[n]) if m in known[n]]
        # One request may name a user once (DUPLICATE_RESOURCE otherwise): a request per mechanism.
        results = []
        for m in dict.fromkeys(d["mechanism"] for d in deletions):
            results += client.call(51, deletions=[d for d in deletions if d["mechanism"] == m], upsertions=[]).results
    for r in results:
        check(r.error_code, f"delete user {r.user}", r.error_message)
    click.echo(f"deleted {len(deletions)} credential(s) of {', '.join(names)}")


@users_group.command("list")
@format_option
@client_options
def list_command(output_format, connection) -> None:
    """List the SCRAM users and their mechanisms."""
    with kafka_client(connection) as client:
        known = _credentials(client, None)
    users = [{"name": name, "mechanisms": [{"mechanism": m, "iterations": i} for m, i in sorted(creds.items())]}
             for name, creds in sorted(known.items())]
    emit(output_format, users, lambda: print_table("users", ["NAME", "MECHANISM", "ITERATIONS"], [
        [u["name"], c["mechanism"], c["iterations"]] for u in users for c in u["mechanisms"]]))
