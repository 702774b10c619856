#!/usr/bin/env python3
"""Runs a command and reports its peak resident memory (the kernel's count for the child, not a
sample), for tests that check memory stays flat while a large file goes through.

    peak_rss.py [--env KEY=VALUE]... [--cwd DIR] -- COMMAND ARGUMENT...

Prints one JSON object: {"status": exit status, "peakKiB": peak RSS, "stdout": …, "stderr": …}.
"""
import json, os, resource, subprocess, sys

environment = dict(os.environ)
cwd = None
arguments = sys.argv[1:]
while arguments and arguments[0] != "--":
    flag, value = arguments[0], arguments[1]
    arguments = arguments[2:]
    if flag == "--env":
        key, _, text = value.partition("=")
        environment[key] = text
    elif flag == "--cwd":
        cwd = value
    else:
        sys.exit(f"peak_rss.py: unknown option {flag}")
command = arguments[1:]
done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=environment, cwd=cwd, timeout=600)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "status": done.returncode,
    "peakKiB": usage.ru_maxrss,
    "stdout": done.stdout.decode("utf-8", "replace"),
    "stderr": done.stderr.decode("utf-8", "replace"),
}))
