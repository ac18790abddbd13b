#!/usr/bin/env bash
# Installs what compat_tests need beyond pip: filled in by the compat harness work.
set -euo pipefail
