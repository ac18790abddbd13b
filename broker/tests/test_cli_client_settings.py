"""broker/cli/client_settings.py: how a client command's connection settings resolve (command
line > TWINLOG_* environment > profile > default), what the protocol follows from, and which
combinations are usage errors (exit 2). A command that only prints what it resolved stands in
for the client commands; compat_tests/security/test_cli_secure.py runs the real ones against a broker."""

from __future__ import annotations

import dataclasses
import json

import click
import pytest
from click.testing import CliRunner

from broker.cli.client_settings import client_options


@click.command()
@client_options
def show(connection) -> None:
    click.echo(json.dumps(dataclasses.asdict(connection)))


@pytest.fixture
def files(tmp_path):
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "pw").write_text("from-file\nsecond line\n")
    return tmp_path


UNSET = dict.fromkeys(["TWINLOG_BOOTSTRAP", "TWINLOG_SECURITY_PROTOCOL", "TWINLOG_SASL_MECHANISM", "TWINLOG_USER",
                       "TWINLOG_PASSWORD", "TWINLOG_PASSWORD_FILE", "TWINLOG_CA", "TWINLOG_CERT", "TWINLOG_KEY",
                       "TWINLOG_PROFILE"])  # None: CliRunner removes them from the environment


def resolve(*args: str, env: dict | None = None, profiles: str | None = None, tmp=None):
    environment = {**UNSET, "TWINLOG_PROFILES_FILE": str(tmp / "none.toml") if tmp else "/nonexistent/profiles.toml",
                   **(env or {})}
    if profiles is not None:
        (tmp / "profiles.toml").write_text(profiles)
        environment["TWINLOG_PROFILES_FILE"] = str(tmp / "profiles.toml")
    result = CliRunner().invoke(show, list(args), env=environment)
    if result.exit_code:
        return result
    return json.loads(result.output)


def usage_error(result, *words: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert all(w in result.output for w in words), result.output


def test_defaults_are_a_plaintext_localhost():
    got = resolve()
    assert (got["bootstrap"], got["security_protocol"], got["user"], got["check_hostname"]) == \
        ("localhost:9092", "PLAINTEXT", None, True)


@pytest.mark.parametrize("args, protocol", [
    (["--user", "u", "--password", "p"], "SASL_PLAINTEXT"),
    (["--user", "u", "--password", "p", "--ca", "{d}/ca.pem"], "SASL_SSL"),
    (["--ca", "{d}/ca.pem"], "SSL"),
    (["--cert", "{d}/cert.pem", "--key", "{d}/key.pem"], "SSL"),
    (["--security-protocol", "sasl_ssl", "--user", "u", "--password", "p"], "SASL_SSL"),
])
def test_the_protocol_follows_from_what_is_given(files, args, protocol):
    assert resolve(*(a.format(d=files) for a in args))["security_protocol"] == protocol


def test_command_line_beats_environment_beats_profile(files):
    profile = f"""current_profile = "p"
[profiles.p]
bootstrap_server = "from-profile:1"
user = "profile-user"
password_file = "pw"
ca = "ca.pem"
[profiles.p.properties]
"client.id" = "profile-client"
"ssl.endpoint.identification.algorithm" = "none"
"""
    got = resolve(profiles=profile, tmp=files)
    assert (got["bootstrap"], got["user"], got["password"], got["ca"], got["security_protocol"]) == \
        ("from-profile:1", "profile-user", "from-file", str(files / "ca.pem"), "SASL_SSL")
    assert (got["client_id"], got["check_hostname"]) == ("profile-client", False)
    env = {"TWINLOG_BOOTSTRAP": "from-env:2", "TWINLOG_PASSWORD": "env-password"}
    got = resolve(env=env, profiles=profile, tmp=files)
    assert (got["bootstrap"], got["user"], got["password"]) == ("from-env:2", "profile-user", "env-password")
    got = resolve("-b", "from-flag:3", "-X", "sasl.username=flag-user", env=env, profiles=profile, tmp=files)
    assert (got["bootstrap"], got["user"], got["password"]) == ("from-flag:3", "flag-user", "env-password")


def test_profile_chosen_by_flag_or_environment(files):
    profile = """current_profile = "a"
[profiles.a]
bootstrap_server = "a:1"
[profiles.b]
bootstrap_server = "b:1"
"""
    assert resolve(profiles=profile, tmp=files)["bootstrap"] == "a:1"
    assert resolve("--profile", "b", profiles=profile, tmp=files)["bootstrap"] == "b:1"
    assert resolve(env={"TWINLOG_PROFILE": "b"}, profiles=profile, tmp=files)["bootstrap"] == "b:1"
    usage_error(resolve("--profile", "c", profiles=profile, tmp=files), "'c'", "profiles.toml")
    usage_error(resolve("--profile", "a", tmp=files), "no profiles file")
    usage_error(resolve(profiles='[profiles.a]\nbootstrap = "x:1"\n', env={"TWINLOG_PROFILE": "a"}, tmp=files),
                "unknown key 'bootstrap'")


def test_kafka_properties_by_java_and_librdkafka_names(files):
    got = resolve("-X", "bootstrap.servers=k:9093", "-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanisms=PLAIN",
                  "-X", "sasl.username=u", "-X", "sasl.password=p", "-X", f"ssl.truststore.location={files}/ca.pem",
                  "-X", "request.timeout.ms=5000")
    assert (got["bootstrap"], got["security_protocol"], got["sasl_mechanism"], got["user"], got["password"],
            got["ca"], got["timeout_ms"]) == ("k:9093", "SASL_SSL", "PLAIN", "u", "p", f"{files}/ca.pem", 5000)
    same = resolve("--security-protocol", "SASL_SSL", "-X", "security.protocol=sasl_ssl", "--user", "u",
                   "--password", "p")  # one setting given both ways, the same value in another case
    assert same["security_protocol"] == "SASL_SSL"


@pytest.mark.parametrize("args, words", [
    (["--user", "u", "--password", "p", "--password-file", "{d}/pw"], ["--password", "--password-file"]),
    (["--security-protocol", "PLAINTEXT", "--user", "u", "--password", "p"], ["SASL", "PLAINTEXT"]),
    (["--security-protocol", "SASL_PLAINTEXT", "--ca", "{d}/ca.pem", "--user", "u", "--password", "p"],
     ["CA", "SASL_PLAINTEXT"]),
    (["--security-protocol", "SASL_SSL", "--user", "u"], ["--user", "--password"]),
    (["--key", "{d}/key.pem"], ["--key needs --cert"]),
    (["--ca", "{d}/missing.pem"], ["--ca", "missing.pem", "no such file"]),
    (["-X", "sasl.kerberos.service.name=kafka"], ["sasl.kerberos.service.name"]),
    (["-X", "novalue"], ["novalue"]),
    (["--user", "a", "-X", "sasl.username=b", "--password", "p"], ["sasl.username=b", "'a'"]),
    (["-X", "ssl.endpoint.identification.algorithm=ldap"], ["https or none"]),
])
def test_contradictions_are_usage_errors(files, args, words):
    usage_error(resolve(*(a.format(d=files) for a in args)), *words)


def test_password_and_password_file_from_different_levels_take_the_higher(files):
    got = resolve("--password-file", str(files / "pw"), "--user", "u", env={"TWINLOG_PASSWORD": "env"})
    assert got["password"] == "from-file"
