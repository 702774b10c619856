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
# A bound on the whole run: a test that hangs (a wait nobody answers) fails the run here, with
# this message, instead of holding CI until its own limit. The suite takes a few minutes.
timeout --signal=TERM --kill-after=30s "${CONFIDANT_TEST_TIMEOUT:-40m}" \
    Tests/with-postgres.sh swift test "$@" || status=$?
if [[ $status == 124 || $status == 137 ]]; then
    echo "The tests did not finish within ${CONFIDANT_TEST_TIMEOUT:-40m}: one of them hangs (see the last 'started' lines above)." >&2
fi

if [[ ${#CONFIDANT_SETUP_NOTES[@]} -gt 0 ]]; then
    echo >&2
    echo "================ NOT EVERYTHING WAS TESTED ================" >&2
    for note in "${CONFIDANT_SETUP_NOTES[@]}"; do echo "  - $note" >&2; done
    echo "===========================================================" >&2
fi
exit $status
