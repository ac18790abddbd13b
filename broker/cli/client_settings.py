"""How a `twinlog` client command reaches a cluster: bootstrap servers, TLS and SASL.

Every client command takes the same options (`client_options`): --bootstrap-server,
--security-protocol, --sasl-mechanism, --user, --password / --password-file, --ca, --cert,
--key, `-X key=value` (Kafka client properties, Java's or librdkafka's names) and --profile.
Each setting is taken from the first of, as rpk resolves them:

    1. the command line (a flag, or -X; the same setting given both ways must agree)
    2. its TWINLOG_* environment variable (TWINLOG_BOOTSTRAP, TWINLOG_USER, ...)
    3. the profile: --profile NAME (or TWINLOG_PROFILE, or the file's `current_profile`) in
       TWINLOG_PROFILES_FILE, else $XDG_CONFIG_HOME/twinlog/profiles.toml (~/.config/...)
    4. the default: localhost:9092, PLAINTEXT

A profile is a TOML table of the long flags' names, `properties` holding -X pairs; relative
paths are relative to the file:

    current_profile = "prod"
    [profiles.prod]
    bootstrap_server = "kafka-1:9093"
    security_protocol = "SASL_SSL"
    sasl_mechanism = "SCRAM-SHA-512"
    user = "admin"
    password_file = "admin.password"
    ca = "ca.pem"
    [profiles.prod.properties]
    "ssl.endpoint.identification.algorithm" = "none"

Without --security-protocol the protocol follows from what is given, as rpk's does: SASL once a
user is named, TLS once a CA or client certificate is. A protocol that contradicts them, two
forms of one setting at one level, SASL without a password, or a file that is not there, is a
usage error (exit 2) before anything is sent. A SASL login defaults to SCRAM-SHA-256, which
never sends the password (PLAIN does, in the clear without TLS).
"""

from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

import click
from click.core import ParameterSource

from broker.settings.table import BY_NAME

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # replica/sasl_login.py logs in with these
DEFAULT_BOOTSTRAP = f"localhost:{BY_NAME['port'].default}"  # a broker serving with the default port
DEFAULT_MECHANISM = "SCRAM-SHA-256"

# setting -> the Kafka client properties (Java's, librdkafka's) that -X and a profile's
# `properties` may set it with
PROPERTIES = {
    "bootstrap": ("bootstrap.servers", "metadata.broker.list"),
    "security_protocol": ("security.protocol",),
    "sasl_mechanism": ("sasl.mechanism", "sasl.mechanisms"),
    "user": ("sasl.username",),
    "password": ("sasl.password",),
    "ca": ("ssl.ca.location", "ssl.truststore.location"),
    "cert": ("ssl.certificate.location", "ssl.keystore.location"),
    "tls_key": ("ssl.key.location",),
    "check_hostname": ("ssl.endpoint.identification.algorithm",),
    "client_id": ("client.id",),
    "timeout_ms": ("request.timeout.ms", "socket.timeout.ms"),
}
BY_PROPERTY = {prop: setting for setting, props in PROPERTIES.items() for prop in props}
# option (and setting) name -> its key in a profile
_FLAGS = {"bootstrap": "bootstrap_server", "security_protocol": "security_protocol",
          "sasl_mechanism": "sasl_mechanism", "user": "user", "password": "password",
          "password_file": "password_file", "ca": "ca", "cert": "cert", "tls_key": "key"}
_PATHS = ("password_file", "ca", "cert", "tls_key")


@dataclass(frozen=True)
class ClientSettings:
    bootstrap: str = DEFAULT_BOOTSTRAP
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    user: str | None = None
    password: str | None = None
    ca: str | None = None
    cert: str | None = None
    tls_key: str | None = None
    check_hostname: bool = True  # ssl.endpoint.identification.algorithm=https, Kafka's default
    client_id: str = "twinlog-cli"
    timeout_ms: int = 30_000

    @property
    def tls(self) -> bool:
        return self.security_protocol.endswith("SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def mechanism(self) -> str:  # replica/sasl_login.py's SaslCredentials
        return self.sasl_mechanism or DEFAULT_MECHANISM

    @property
    def username(self) -> str:
        return self.user or ""


def _options(key_flags: tuple[str, ...]) -> tuple:
    return (
        click.option("--bootstrap-server", "--bootstrap", "-b", "bootstrap", envvar="TWINLOG_BOOTSTRAP",
                     show_envvar=True, help=f"A broker of the cluster, host:port, or a list  [default: {DEFAULT_BOOTSTRAP}]"),
        click.option("--security-protocol", type=click.Choice(PROTOCOLS, case_sensitive=False),
                     envvar="TWINLOG_SECURITY_PROTOCOL", show_envvar=True,
                     help="[default: from the other options, else PLAINTEXT]"),
        click.option("--sasl-mechanism", type=click.Choice(MECHANISMS, case_sensitive=False),
                     envvar="TWINLOG_SASL_MECHANISM", show_envvar=True, help=f"[default: {DEFAULT_MECHANISM}]"),
        click.option("--user", envvar="TWINLOG_USER", show_envvar=True, help="SASL user name."),
        click.option("--password", envvar="TWINLOG_PASSWORD", show_envvar=True, help="SASL password."),
        click.option("--password-file", envvar="TWINLOG_PASSWORD_FILE", show_envvar=True,
                     help="A file whose first line is the SASL password."),
        click.option("--ca", envvar="TWINLOG_CA", show_envvar=True, help="CA certificates (PEM) to trust the brokers by."),
        click.option("--cert", envvar="TWINLOG_CERT", show_envvar=True, help="Client certificate (PEM), for mTLS."),
        click.option(*key_flags, "tls_key", envvar="TWINLOG_KEY", show_envvar=True,
                     help="The client certificate's private key (PEM)."),
        click.option("-X", "properties", multiple=True, metavar="KEY=VALUE",
                     help="A Kafka client property, e.g. -X sasl.mechanism=PLAIN (repeatable)."),
        click.option("--profile", envvar="TWINLOG_PROFILE", show_envvar=True,
                     help="A profile of the profiles file (TWINLOG_PROFILES_FILE or ~/.config/twinlog/profiles.toml)."),
    )


_PARAMS = (*_FLAGS, "properties", "profile")


def client_options(command=None, *, key_flags: tuple[str, ...] = ("--key", "--tls-key")):
    """The connection options on a command, which receives them resolved as `connection`.
    `key_flags`: a command whose own --key means a record key (lookup) takes --tls-key only."""
    if command is None:
        return functools.partial(client_options, key_flags=key_flags)

    @functools.wraps(command)
    def run(*args, **params):
        ctx = click.get_current_context()
        given = {name: params.pop(name) for name in _PARAMS}
        return command(*args, connection=resolve(ctx, given), **params)
    for option in reversed(_options(key_flags)):
        run = option(run)
    return run


def resolve(ctx: click.Context, given: dict) -> ClientSettings:
    """The settings from the options' values `given`: each from the command line, else the
    environment, else the profile (click says which of the first two a value came from)."""
    flags, env = {}, {}
    for name in _FLAGS:
        source = ctx.get_parameter_source(name)
        if given[name] is not None and source is not ParameterSource.DEFAULT:
            (env if source is ParameterSource.ENVIRONMENT else flags)[name] = given[name]
    flags = _merge_properties(flags, _x_properties(given["properties"]), "-X", Path.cwd())
    profile = _profile(given["profile"])
    values: dict = {}
    for level in (profile, env, flags):  # later levels win
        if "password" in level or "password_file" in level:
            values.pop("password", None)
            values.pop("password_file", None)
        values.update(level)
    return _settings(values)


def _x_properties(pairs: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        prop, sep, value = pair.partition("=")
        if not sep:
            raise click.UsageError(f"-X {pair!r} is not KEY=VALUE")
        out.append((prop, value))
    return out


def _merge_properties(level: dict, properties: list[tuple[str, str]], where: str, base: Path) -> dict:
    """A level's settings with its Kafka properties added (relative paths from `base`); a
    setting given twice at one level must be given the same value."""
    out = dict(level)
    for prop, value in properties:
        if prop not in BY_PROPERTY:
            raise click.UsageError(f"{where} {prop}: not a property this client uses "
                                   f"({', '.join(sorted(BY_PROPERTY))})")
        name = BY_PROPERTY[prop]
        if name in _PATHS and value:
            value = str(base / Path(value).expanduser())
        if name in out and _canonical(name, out[name]) != _canonical(name, value):
            raise click.UsageError(f"{where} {prop}={value} contradicts {out[name]!r} given for the same setting")
        out[name] = value
    return out


def _canonical(name: str, value) -> str:
    return str(value).upper() if name in ("security_protocol", "sasl_mechanism") else str(value)


def profiles_file() -> Path:
    named = os.environ.get("TWINLOG_PROFILES_FILE")
    if named:
        return Path(named).expanduser()
    config_home = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config_home) / "twinlog" / "profiles.toml"


def _profile(name: str | None) -> dict:
    path = profiles_file()
    if not path.is_file():
        if name:
            raise click.UsageError(f"profile {name!r}: there is no profiles file {path}")
        return {}
    try:
        document = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.UsageError(f"profiles file {path}: {exc}") from None
    name = name or document.get("current_profile")
    if not name:
        return {}
    profile = document.get("profiles", {}).get(name)
    if not isinstance(profile, dict):
        raise click.UsageError(f"profile {name!r} is not in {path}")
    by_key = {key: name for name, key in _FLAGS.items()}
    out = {}
    for key, value in profile.items():
        if key == "properties":
            continue
        if key not in by_key:
            raise click.UsageError(f"profile {name!r} in {path}: unknown key {key!r} "
                                   f"(known: {', '.join(sorted(by_key))}, properties)")
        value = str(value)  # a TOML number or boolean given where text is meant
        out[by_key[key]] = str(path.parent / Path(value).expanduser()) if by_key[key] in _PATHS else value
    return _merge_properties(out, [(k, str(v)) for k, v in profile.get("properties", {}).items()],
                             f"profile {name!r} property", path.parent)


def _settings(values: dict) -> ClientSettings:
    if "password" in values and "password_file" in values:
        raise click.UsageError("give --password or --password-file, not both")
    for name in _PATHS:
        if values.get(name) and not os.path.isfile(values[name]):
            raise click.UsageError(f"--{_FLAGS[name].replace('_', '-')} {values[name]}: no such file")
    if "password_file" in values:
        path = values.pop("password_file")
        try:
            lines = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"--password-file {path}: {exc}") from None
        values["password"] = lines[0] if lines else ""
    if "check_hostname" in values:
        algorithm = str(values["check_hostname"]).lower()
        if algorithm not in ("https", "", "none"):
            raise click.UsageError(f"ssl.endpoint.identification.algorithm={algorithm}: expected https or none")
        values["check_hostname"] = algorithm == "https"
    if "timeout_ms" in values:
        if not str(values["timeout_ms"]).isdigit():
            raise click.UsageError(f"request.timeout.ms={values['timeout_ms']}: expected milliseconds")
        values["timeout_ms"] = int(values["timeout_ms"])
    for name, choices in (("security_protocol", PROTOCOLS), ("sasl_mechanism", MECHANISMS)):
        if values.get(name) is not None:
            values[name] = str(values[name]).upper()
            if values[name] not in choices:
                raise click.UsageError(f"{name.replace('_', '.')} {values[name]}: expected one of {', '.join(choices)}")
    wants_sasl = any(values.get(n) for n in ("user", "sasl_mechanism"))
    wants_tls = any(values.get(n) for n in ("ca", "cert", "tls_key"))
    protocol = values.get("security_protocol") or (
        ("SASL_" if wants_sasl else "") + ("SSL" if wants_tls else "PLAINTEXT"))
    settings = replace(ClientSettings(), **{**values, "security_protocol": protocol})
    if wants_sasl and not settings.sasl:
        raise click.UsageError(f"a SASL user or mechanism is given but the security protocol is {protocol}")
    if wants_tls and not settings.tls:
        raise click.UsageError(f"a CA or client certificate is given but the security protocol is {protocol}")
    if settings.tls_key and not settings.cert:
        raise click.UsageError("--key needs --cert")
    if settings.sasl and (not settings.user or settings.password is None):
        raise click.UsageError(f"{protocol} needs --user and --password (or --password-file)")
    return settings
