#!/usr/bin/env bash
# The test command (README and .ci/run): `swift test` with a throw-away PostgreSQL cluster, so
# that every relay test runs on SQLite and on PostgreSQL. Arguments go to `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."
exec Tests/with-postgres.sh swift test "$@"
