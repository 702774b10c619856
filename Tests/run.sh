#!/usr/bin/env bash
# The test command (README and .ci/run). On a fresh machine it first sets up what the tests need
# (Tests/setup.sh: a Python virtual environment, PostgreSQL when it can be installed), then runs
# `swift test` with a throw-away PostgreSQL cluster, so that every relay test runs on SQLite and
# on PostgreSQL. Arguments go to `swift test`. Ends with a summary of anything that was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
source Tests/setup.sh

# The suite runs in one process: every test's relay shares NIO's blocking thread pool, which runs
# SQLite's statements and has a thread per core (two here). One relay per process, as deployed,
# has those threads to itself; dozens sharing two waited past a client's 30 s read timeout. More
# threads for the test process, and fewer tests at once (Swift Testing starts every test at once
# otherwise), keep a busy machine from failing tests about something else.
export NIO_SINGLETON_BLOCKING_POOL_THREAD_COUNT=${NIO_SINGLETON_BLOCKING_POOL_THREAD_COUNT:-16}
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-24}

status=0
# The run's output is kept to list what was skipped: a test whose prerequisite is missing ends as
# skipped with "NOT TESTED: why" (ConfidantTestSupport's Prerequisite), never as a pass.
output=$(mktemp)
CONFIDANT_TEST_UNTESTED=$(mktemp)
export CONFIDANT_TEST_UNTESTED
trap 'rm -f "$output" "$CONFIDANT_TEST_UNTESTED"' EXIT
# A bound on the whole run: a test that hangs (a wait nobody answers) fails the run here, with
# this message, instead of holding CI until its own limit. The suite takes a few minutes.
set +e
timeout --signal=TERM --kill-after=30s "${CONFIDANT_TEST_TIMEOUT:-40m}" \
    Tests/with-postgres.sh swift test "$@" 2>&1 | tee "$output"
status=${PIPESTATUS[0]}
set -e
if [[ $status == 124 || $status == 137 ]]; then
    echo "The tests did not finish within ${CONFIDANT_TEST_TIMEOUT:-40m}: one of them hangs (see the last 'started' lines above)." >&2
fi

untested=("${CONFIDANT_SETUP_NOTES[@]}")
while IFS= read -r line; do untested+=("$line"); done < <(sort -u "$CONFIDANT_TEST_UNTESTED")
while IFS= read -r line; do untested+=("$line"); done < <(grep -E '^➜ .* skipped' "$output" | sed 's/^➜ //' || true)
if [[ ${#untested[@]} -gt 0 ]]; then
    echo >&2
    echo "================ NOT EVERYTHING WAS TESTED ================" >&2
    for note in "${untested[@]}"; do echo "  - $note" >&2; done
    echo "===========================================================" >&2
    # CI runs as root with PostgreSQL and Chromium installable: there, anything untested fails.
    if [[ ${CI:-} == true && $status == 0 ]]; then
        echo "CI=true: everything the README promises must be tested; failing the run." >&2
        status=1
    fi
fi
exit $status
