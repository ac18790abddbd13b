#!/usr/bin/env python3
"""Stand-in for Kafka's `kafka-topics.sh --list --bootstrap-server H:P [--command-config F]`.

kafka-python's SASL test checks a topic it created through its admin client by listing topics
with Kafka's own tool. We list them with another client, kcat (librdkafka), logging in with the
same settings (security.protocol, sasl.mechanism, the username/password of sasl.jaas.config), so
the check still goes through a second, independent client. Only --list is stood in.
"""
import re
import subprocess
import sys


def main(argv):
    if "--list" not in argv or "--bootstrap-server" not in argv:
        sys.exit("kafka-topics.sh stand-in: only --list --bootstrap-server is supported: %r" % argv)
    cmd = ["kcat", "-L", "-m", "10", "-b", argv[argv.index("--bootstrap-server") + 1]]
    if "--command-config" in argv:
        props = {}
        with open(argv[argv.index("--command-config") + 1]) as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep:
                    props[key] = value
        cmd += ["-X", "security.protocol=" + props["security.protocol"]]
        if "sasl.mechanism" in props:
            jaas = props["sasl.jaas.config"]
            cmd += ["-X", "sasl.mechanisms=" + props["sasl.mechanism"],
                    "-X", "sasl.username=" + re.search(r'\busername="([^"]*)"', jaas).group(1),
                    "-X", "sasl.password=" + re.search(r'\bpassword="([^"]*)"', jaas).group(1)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30).stdout
    for name in re.findall(r'^\s*topic "([^"]+)" with', out, re.M):
        print(name)


if __name__ == "__main__":
    main(sys.argv[1:])
