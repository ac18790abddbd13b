"""The `twinlog` client commands against a secured broker (issue 37): `.venv/bin/twinlog ...`
subprocesses, as an operator runs them, against a real broker whose clients must authenticate.
One broker for the module (broker/security/self_signed_tls.py makes its CA and certificates),
with the authorizer on:

    PLAINTEXT  the BrokerProcess port, for its readiness probe only: User:ANONYMOUS may do nothing
    SASL_SSL   PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; admin is a super user
    MTLS       SSL with ssl.client.auth=required; the certificate of CN=cli is a super user

Checked: every client command over SASL_SSL; mTLS with --cert/--key; a profile file, its
precedence below the environment and the command line, and -X properties; --format json and
yaml parsed; acls and users round trips whose effect a real login shows; produce auto-creating
a topic and splitting two 524,280-byte lines (and a topic's own max.message.bytes) into batches
the broker accepts; exit status 2 for conflicting flags and 1 for a group or topic that does
not exist. Authentication and the commands' options do not touch storage, so the broker runs
in one layout; the tests whose records reach a log run over topics of both (storage.mode per
topic), and the auto-created topic is in the broker's default layout.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from broker.security.self_signed_tls import make_tls_files
from compat_tests.helpers.broker_process import ROOT, BrokerProcess, free_port
from compat_tests.helpers.topics import unique_topic

TWINLOG = str(ROOT / ".venv" / "bin" / "twinlog")
ADMIN_PASSWORD = "admin-secret"
CLI_PRINCIPAL = "User:CN=cli,OU=eng,O=twinlog"
HALF_MEGABYTE_LINE = 524_280  # two of them are one byte more than message.max.bytes in a batch


LAYOUTS = ("segment", "commitlog")


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    home = tmp_path_factory.mktemp("cli-secure")
    files = make_tls_files(home / "tls", clients=[("cli", "eng")])
    (home / "plain.jaas").write_text(f'user_admin="{ADMIN_PASSWORD}";\n')
    plain, sasl_ssl, mtls = free_port(), free_port(), free_port()
    proc = BrokerProcess(port=plain, extra_args=[
        "--listeners", f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{sasl_ssl},MTLS://127.0.0.1:{mtls}",
        "--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL",
        "--ssl-keystore-location", str(files.broker_cert), "--ssl-key-location", str(files.broker_key),
        "--ssl-truststore-location", str(files.ca), "--listener-ssl-client-auth", "MTLS=required",
        "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "--sasl-plain-users", str(home / "plain.jaas"),
        "--sasl-scram-user", f"SCRAM-SHA-256=[name=admin,password={ADMIN_PASSWORD}]",
        "--sasl-scram-user", f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]",
        "--authorizer", "--super-users", f"User:admin;{CLI_PRINCIPAL}",
        "--group-initial-rebalance-delay-ms", "0"])
    proc.home, proc.files = home, files
    proc.sasl_ssl, proc.mtls = f"127.0.0.1:{sasl_ssl}", f"127.0.0.1:{mtls}"
    try:
        yield proc.start()
    finally:
        proc.cleanup()


def admin_flags(broker, mechanism: str = "SCRAM-SHA-256") -> list[str]:
    return ["-b", broker.sasl_ssl, "--security-protocol", "SASL_SSL", "--sasl-mechanism", mechanism,
            "--user", "admin", "--password", ADMIN_PASSWORD, "--ca", str(broker.files.ca)]


def run(broker, *args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`twinlog ARGS` with no TWINLOG_* settings and no profile unless `env` gives them; HOME
    is the module's directory, so the operator's ~/.config is never read."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TWINLOG_") and k != "XDG_CONFIG_HOME"}
    environment = {**base, "HOME": str(broker.home), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([TWINLOG, *args], input=stdin, capture_output=True, text=True, timeout=90,
                          env=environment)


def ok(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, f"{' '.join(out.args[1:])}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def admin(broker, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return ok(run(broker, *args, *admin_flags(broker), stdin=stdin))


def failed(out: subprocess.CompletedProcess, status: int, *words: str, quiet: bool = True) -> str:
    """Exit `status` with the reason on stderr, naming `words`, and (`quiet`) nothing on stdout."""
    assert out.returncode == status, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and (out.stdout == "" or not quiet), (out.stdout, out.stderr)
    error = next(line for line in out.stderr.splitlines() if line.startswith("Error: "))
    assert all(w in error for w in words), error
    return error


def as_json(out: subprocess.CompletedProcess):
    return json.loads(ok(out).stdout)


@pytest.mark.parametrize("storage_mode", LAYOUTS)
def test_every_client_command_over_sasl_ssl(secure, storage_mode):
    b, name, group = secure, unique_topic("sec-cmds"), unique_topic("sec-group")
    admin(b, "topics", "create", name, "-p", "2", "-c", f"storage.mode={storage_mode}")
    assert name in [t["name"] for t in as_json(run(b, "topics", "list", "--format", "json", *admin_flags(b)))]
    admin(b, "topics", "alter-config", name, "--set", "retention.ms=600000")
    assert "2 -> 3 partitions" in admin(b, "topics", "add-partitions", name, "-n", "1").stdout
    described = as_json(run(b, "topics", "describe", name, "--format", "json", *admin_flags(b, "SCRAM-SHA-512")))
    assert len(described["partitions"]) == 3
    assert {"name": "retention.ms", "value": "600000", "source": "topic", "sensitive": False} in described["configs"]

    assert admin(b, "produce", name, "-k", ":", stdin="k1:one\nk2:two\nk1:three\n").stdout.startswith(
        f"produced 3 record(s) to {name}")
    records = [json.loads(line) for line in admin(b, "consume", name, "-e", "-f", "json", "-g", group).stdout.splitlines()]
    assert sorted(r["value"] for r in records) == ["one", "three", "two"]
    groups = as_json(run(b, "groups", "list", "--format", "json", *admin_flags(b, "PLAIN")))
    assert {"group": group, "state": "Empty", "protocol_type": None, "coordinator": 1} in groups
    (described_group,) = as_json(run(b, "groups", "describe", group, "--format", "json", *admin_flags(b)))
    assert described_group["total_lag"] == 0 and len(described_group["partitions"]) == 3
    reset = as_json(run(b, "groups", "reset-offsets", group, "--to-earliest", "--format", "json", *admin_flags(b)))
    assert {p["new_offset"] for p in reset["partitions"]} == {0}
    assert as_json(run(b, "groups", "describe", group, "--format", "json", *admin_flags(b)))[0]["total_lag"] == 3
    admin(b, "groups", "delete", group)
    status = as_json(run(b, "cluster", "status", "--format", "json", *admin_flags(b)))
    assert status["brokers"][0]["controller"] and status["offline"] == 0
    lookup = run(b, "lookup", "--topic", name, "--key", "k1", *admin_flags(b))
    if storage_mode == "commitlog":
        assert [line.split("\t")[3] for line in ok(lookup).stdout.splitlines()] == ["one", "three"]
    else:
        failed(lookup, 1, "no key lookup")
    admin(b, "topics", "delete", name)

    # The same commands without the credentials, or with wrong ones, are refused at the door.
    failed(run(b, "topics", "list", "-b", b.sasl_ssl), 1, b.sasl_ssl, "--security-protocol")
    failed(run(b, "topics", "list", *admin_flags(b)[:-4], "--password", "wrong", "--ca", str(b.files.ca)), 1,
           "SCRAM-SHA-256", "admin", "failed")
    failed(run(b, "topics", "list", "-b", b.sasl_ssl, "--security-protocol", "SASL_SSL", "--user", "admin",
               "--password", ADMIN_PASSWORD), 1, "TLS", "CERTIFICATE_VERIFY_FAILED")  # its CA is not the system's


def test_mutual_tls_with_a_client_certificate(secure):
    b = secure
    tls = ["-b", b.mtls, "--ca", str(b.files.ca), "--cert", str(b.files.client_cert("cli")),
           "--key", str(b.files.client_key("cli"))]
    name = unique_topic("sec-mtls")
    ok(run(b, "topics", "create", name, *tls))  # CN=cli is a super user: the certificate is the principal
    assert name in [t["name"] for t in as_json(run(b, "topics", "list", "--format", "json", *tls))]
    failed(run(b, "topics", "list", *tls[:4]), 1, b.mtls, "--cert")  # the listener requires a certificate


def test_a_profile_file_and_its_precedence(secure, tmp_path):
    b = secure
    (tmp_path / "ca.pem").write_bytes(b.files.ca.read_bytes())
    (tmp_path / "admin.password").write_text(ADMIN_PASSWORD + "\n")
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(f"""\
current_profile = "secure"

[profiles.secure]
bootstrap_server = "{b.sasl_ssl}"
security_protocol = "SASL_SSL"
user = "admin"
password_file = "admin.password"
ca = "ca.pem"

[profiles.secure.properties]
"sasl.mechanism" = "SCRAM-SHA-512"

[profiles.elsewhere]
bootstrap_server = "127.0.0.1:{free_port()}"
""")
    env = {"TWINLOG_PROFILES_FILE": str(profiles)}
    name = unique_topic("sec-profile")
    ok(run(b, "topics", "create", name, env=env))  # the current profile, paths relative to the file
    assert ok(run(b, "produce", name, stdin="a\nb\n", env=env)).stdout.startswith("produced 2 record(s)")
    assert ok(run(b, "consume", name, "-e", env=env)).stdout == "a\nb\n"
    failed(run(b, "topics", "list", "--profile", "elsewhere", env=env), 1, "cannot connect")
    # flags > environment > profile
    failed(run(b, "topics", "list", env={**env, "TWINLOG_PASSWORD": "wrong"}), 1, "SCRAM-SHA-512", "failed")
    ok(run(b, "topics", "list", "--password", ADMIN_PASSWORD, env={**env, "TWINLOG_PASSWORD": "wrong"}))
    ok(run(b, "topics", "list", env={**env, "TWINLOG_PROFILE": "elsewhere", "TWINLOG_BOOTSTRAP": b.sasl_ssl,
                                     "TWINLOG_USER": "admin", "TWINLOG_PASSWORD": ADMIN_PASSWORD,
                                     "TWINLOG_CA": str(b.files.ca)}))
    failed(run(b, "topics", "list", "--profile", "nowhere", env=env), 2, "nowhere", str(profiles))
    # -X: Kafka's property names (librdkafka's and Java's), as kcat -X takes them
    props = ["-X", f"bootstrap.servers={b.sasl_ssl}", "-X", "security.protocol=sasl_ssl",
             "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=admin", "-X", f"sasl.password={ADMIN_PASSWORD}",
             "-X", f"ssl.truststore.location={b.files.ca}"]
    assert name in [t["name"] for t in as_json(run(b, "topics", "list", "--format", "json", *props))]
    failed(run(b, "topics", "list", *props, "-X", "sasl.kerberos.service.name=kafka"), 2,
           "sasl.kerberos.service.name")
    failed(run(b, "topics", "list", *props, "--user", "someone"), 2, "sasl.username", "someone")


def test_format_json_and_yaml_say_the_same(secure):
    b, name = secure, unique_topic("sec-format")
    admin(b, "topics", "create", name, "-p", "2")
    for command in (["topics", "list"], ["topics", "describe", name], ["groups", "list"], ["cluster", "status"],
                    ["acls", "list"], ["users", "list"]):
        as_json_document = as_json(run(b, *command, "--format", "json", *admin_flags(b)))
        assert yaml.safe_load(ok(run(b, *command, "--format", "yaml", *admin_flags(b))).stdout) == as_json_document
    described = as_json(run(b, "topics", "describe", name, "--format", "json", *admin_flags(b)))
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in described["partitions"]] == \
        [(0, 1, [1], [1]), (1, 1, [1], [1])]


def test_users_round_trip_and_their_logins(secure):
    b, user = secure, unique_topic("user")
    as_alice = ["-b", b.sasl_ssl, "--user", user, "--ca", str(b.files.ca)]
    failed(run(b, "topics", "list", *as_alice, "--password", "first"), 1, "failed")
    admin(b, "users", "create", user, "--new-password", "first")
    admin(b, "users", "create", user, "--new-password", "other", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")
    listed = {u["name"]: u["mechanisms"] for u in as_json(run(b, "users", "list", "--format", "json", *admin_flags(b)))}
    assert listed[user] == [{"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                            {"mechanism": "SCRAM-SHA-512", "iterations": 8192}]
    assert listed["admin"]
    ok(run(b, "topics", "list", *as_alice, "--password", "first"))
    ok(run(b, "topics", "list", *as_alice, "--password", "other", "--sasl-mechanism", "SCRAM-SHA-512"))
    failed(run(b, "users", "create", user, "--new-password", "again", *admin_flags(b)), 1, user, "users alter")

    admin(b, "users", "alter", user, "--new-password", "second")
    failed(run(b, "topics", "list", *as_alice, "--password", "first"), 1, "failed")
    ok(run(b, "topics", "list", *as_alice, "--password", "second"))

    admin(b, "users", "delete", user)
    failed(run(b, "topics", "list", *as_alice, "--password", "second"), 1, "failed")
    assert user not in [u["name"] for u in as_json(run(b, "users", "list", "--format", "json", *admin_flags(b)))]
    failed(run(b, "users", "delete", user, *admin_flags(b)), 1, user)
    failed(run(b, "users", "alter", user, "--new-password", "x", *admin_flags(b)), 1, user, "users create")


def test_acls_round_trip_and_their_effect(secure):
    b, user = secure, unique_topic("writer")
    prefix = unique_topic("acl") + "."
    admin(b, "users", "create", user, "--new-password", "pw")
    as_writer = ["-b", b.sasl_ssl, "--user", user, "--password", "pw", "--ca", str(b.files.ca)]
    admin(b, "topics", "create", prefix + "orders", "-p", "1")
    failed(run(b, "produce", prefix + "orders", *as_writer, stdin="x\n"), 1, "TOPIC_AUTHORIZATION_FAILED")

    created = admin(b, "acls", "create", "--allow-principal", f"User:{user}", "--operation", "write",
                    "--operation", "describe", "--topic", prefix, "--resource-pattern-type", "prefixed").stdout
    assert "created ACLs" in created and created.count(f"User:{user}") == 2
    listed = as_json(run(b, "acls", "list", "--principal", f"User:{user}", "--format", "json", *admin_flags(b)))
    assert sorted(a["operation"] for a in listed) == ["DESCRIBE", "WRITE"]
    assert all((a["resource_type"], a["resource_name"], a["pattern_type"], a["permission"], a["host"]) ==
               ("TOPIC", prefix, "PREFIXED", "ALLOW", "*") for a in listed)
    matching = as_json(run(b, "acls", "list", "--topic", prefix + "orders", "--resource-pattern-type", "match",
                           "--format", "json", *admin_flags(b)))
    assert {a["operation"] for a in matching if a["principal"] == f"User:{user}"} == {"DESCRIBE", "WRITE"}

    assert ok(run(b, "produce", prefix + "orders", *as_writer, stdin="x\n")).stdout.startswith("produced 1")
    refused = run(b, "topics", "create", "elsewhere-" + user, "--format", "json", *as_writer)
    failed(refused, 1, "elsewhere-" + user, quiet=False)
    assert json.loads(refused.stdout) == [{"name": "elsewhere-" + user,
                                           "error": "TOPIC_AUTHORIZATION_FAILED: Authorization failed."}]

    deleted = as_json(run(b, "acls", "delete", "--principal", f"User:{user}", "--operation", "write",
                          "--format", "json", *admin_flags(b)))
    assert [a["operation"] for a in deleted] == ["WRITE"]
    left = as_json(run(b, "acls", "list", "--principal", f"User:{user}", "--format", "json", *admin_flags(b)))
    assert [a["operation"] for a in left] == ["DESCRIBE"]
    failed(run(b, "produce", prefix + "orders", *as_writer, stdin="y\n"), 1, "TOPIC_AUTHORIZATION_FAILED")
    failed(run(b, "acls", "list", "-b", b.sasl_ssl, "--user", user, "--password", "pw", "--ca", str(b.files.ca)),
           1, "CLUSTER_AUTHORIZATION_FAILED")


def test_produce_creates_the_topic_and_stores_two_half_megabyte_lines(secure):
    b, name = secure, unique_topic("sec-big")
    lines = ["a" * HALF_MEGABYTE_LINE, "b" * HALF_MEGABYTE_LINE]
    out = admin(b, "produce", name, stdin="\n".join(lines) + "\n").stdout  # `name` does not exist yet
    assert out.startswith(f"produced 2 record(s) to {name}; partition 0: offsets 0-1"), out
    described = as_json(run(b, "topics", "describe", name, "--format", "json", *admin_flags(b)))
    assert [p["high_watermark"] for p in described["partitions"]] == [2]  # num.partitions: 1
    records = [json.loads(line) for line in admin(b, "consume", name, "-e", "-f", "json").stdout.splitlines()]
    assert [r["value"] for r in records] == lines


@pytest.mark.parametrize("storage_mode", LAYOUTS)
def test_produce_splits_batches_at_the_topics_max_message_bytes(secure, storage_mode):
    """The topic's own max.message.bytes, read with DescribeConfigs: five 1,000-byte lines fit in
    no batch of 3,000 bytes together (one batch is what produce sent before, and the broker
    refused it), and each fits alone or in pairs. Two half-megabyte lines against the default."""
    b, big = secure, unique_topic("sec-big-" + storage_mode)
    admin(b, "topics", "create", big, "-c", f"storage.mode={storage_mode}")
    lines = ["a" * HALF_MEGABYTE_LINE, "b" * HALF_MEGABYTE_LINE]
    assert admin(b, "produce", big, stdin="\n".join(lines) + "\n").stdout.startswith("produced 2 record(s)")
    assert admin(b, "consume", big, "-e").stdout.splitlines() == lines
    small = unique_topic("sec-small-batches")
    admin(b, "topics", "create", small, "-c", "max.message.bytes=3000", "-c", f"storage.mode={storage_mode}")
    lines = [str(i) * 1000 for i in range(5)]
    assert admin(b, "produce", small, stdin="\n".join(lines) + "\n").stdout.startswith("produced 5 record(s)")
    assert admin(b, "consume", small, "-e").stdout.splitlines() == lines


def test_conflicting_flags_exit_2_before_anything_is_sent(secure):
    b, nowhere = secure, f"127.0.0.1:{free_port()}"
    failed(run(b, "groups", "reset-offsets", "g", "--to-earliest", "--to-latest", "-b", nowhere), 2,
           "--to-earliest", "--to-latest")
    failed(run(b, "groups", "reset-offsets", "g", "--to-offset", "3", "--shift-by", "1", "-b", nowhere), 2,
           "--to-offset", "--shift-by")
    failed(run(b, "consume", "t", "--from-beginning", "--offset", "5", "-b", nowhere), 2,
           "--from-beginning", "--offset")
    failed(run(b, "topics", "list", "-b", nowhere, "--user", "u", "--password", "p", "--password-file",
               str(b.files.ca)), 2, "--password", "--password-file")
    failed(run(b, "topics", "list", "-b", nowhere, "--security-protocol", "PLAINTEXT", "--user", "u",
               "--password", "p"), 2, "PLAINTEXT")
    failed(run(b, "topics", "list", "-b", nowhere, "--security-protocol", "SASL_SSL"), 2, "--user", "--password")
    failed(run(b, "users", "create", "u", "--new-password", "p", "--new-password-file", str(b.files.ca),
               "-b", nowhere), 2, "--new-password", "--new-password-file")
    failed(run(b, "acls", "delete", "-b", nowhere), 2, "every ACL")


def test_a_group_or_topic_that_does_not_exist_exits_1(secure):
    b, missing = secure, unique_topic("sec-missing")
    failed(run(b, "groups", "describe", missing, *admin_flags(b)), 1, missing, "not exist")
    failed(run(b, "groups", "describe", missing, "--format", "json", *admin_flags(b)), 1, missing)
    failed(run(b, "topics", "describe", missing, *admin_flags(b)), 1, missing, "UNKNOWN_TOPIC_OR_PARTITION")
    failed(run(b, "consume", missing, "-e", *admin_flags(b)), 1, missing, "UNKNOWN_TOPIC_OR_PARTITION")
    failed(run(b, "topics", "add-partitions", missing, "-n", "1", *admin_flags(b)), 1, missing)
    failed(run(b, "topics", "alter-config", missing, "--set", "retention.ms=1", *admin_flags(b)), 1, missing,
           "UNKNOWN_TOPIC_OR_PARTITION")
    deleted = run(b, "groups", "delete", missing, "--format", "json", *admin_flags(b))
    failed(deleted, 1, missing, quiet=False)  # the results first, for a script to read
    assert json.loads(deleted.stdout) == [{"name": missing, "error": "GROUP_ID_NOT_FOUND"}]


def test_produce_leaves_a_missing_topic_alone_where_the_broker_does_not_auto_create(secure):
    """The broker's auto.create.topics.enable is the operator's policy: `produce` asks Metadata to
    create (as kcat does), so with the policy off the topic stays missing and the command says so."""
    plain, missing = BrokerProcess(extra_args=["--no-auto-create-topics"]), unique_topic("sec-no-auto")
    try:
        plain.start()
        out = run(secure, "produce", missing, "-b", plain.bootstrap, stdin="x\n")
        failed(out, 1, missing, "auto.create.topics.enable=false")
        failed(run(secure, "topics", "describe", missing, "-b", plain.bootstrap), 1, "UNKNOWN_TOPIC_OR_PARTITION")
    finally:
        plain.cleanup()
