"""The cost of one child process, for the comparison scripts in Benchmarks/ (vault-vs-age.sh,
sblock-cli.sh): wall time, and the child's own CPU time and peak memory from wait4, so that
neither the script nor other children are counted."""
import os
import subprocess
import time


def run(command, env=None, stdin=None, stdout=subprocess.DEVNULL):
    """Runs `command` to its end; returns (wall seconds, CPU seconds (user + system), peak RSS in
    MiB). Fails unless it exits with 0."""
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    assert code == 0, (command, code)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
