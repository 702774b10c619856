#!/usr/bin/env python3
"""The pages each kind of transaction writes to the messengers' local logs (docs/BENCHMARKS.md).

SQLite appends every page a transaction changed to the store's write-ahead log, one frame a page,
and a commit frame ends each transaction. This runs `relay-load kit`, stops its process
(SIGSTOP) a moment into the sending, copies both messengers' stores with their logs, lets it go
on, and reads the frames back: each transaction's pages, each page named by the table or index
it belongs to (SQLite's `dbstat`). Transactions of the same shape are counted together. Counts
do not move with the machine's speed, unlike rates and CPU times.

    python3 Benchmarks/store_pages.py [--bin .build-bench/release/relay-load] [--window 1]
        [--messages 6000] [--delay 1.5] [-- more relay-load kit arguments]
"""
import argparse
import collections
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

WAL_HEADER = struct.Struct(">IIIIIIII")
FRAME_HEADER = struct.Struct(">IIIIII")


def transactions(wal_path):
    """The page numbers of each committed transaction in the log, oldest first (frames of an
    earlier generation of the log, with other salts, are left out)."""
    with open(wal_path, "rb") as file:
        wal = file.read()
    if len(wal) < WAL_HEADER.size:
        return []
    _, _, page_size, _, salt1, salt2, _, _ = WAL_HEADER.unpack_from(wal, 0)
    offset, current, committed = WAL_HEADER.size, [], []
    while offset + FRAME_HEADER.size + page_size <= len(wal):
        page, commit_size, frame_salt1, frame_salt2, _, _ = FRAME_HEADER.unpack_from(wal, offset)
        if (frame_salt1, frame_salt2) != (salt1, salt2):
            break
        current.append(page)
        if commit_size:
            committed.append(current)
            current = []
        offset += FRAME_HEADER.size + page_size
    return committed


def page_names(store_path):
    """Which table or index each page belongs to, read through SQLite (which applies the log).
    The copy is opened for writing, as SQLite needs to read a log it has no shared memory for."""
    connection = sqlite3.connect(store_path)
    try:
        names = {page: name for name, page in connection.execute("SELECT name, pageno FROM dbstat")}
    finally:
        connection.close()
    names.setdefault(1, "sqlite_schema")
    return names


def report(profile, directory):
    committed = transactions(os.path.join(directory, "store.sqlite-wal"))
    names = page_names(os.path.join(directory, "store.sqlite"))
    shapes = collections.Counter(
        tuple(sorted(names.get(page, f"page {page}") for page in pages)) for pages in committed)
    frames = sum(len(pages) for pages in committed)
    print(f"{profile}: {len(committed)} transactions, {frames} pages in the log")
    for shape, count in shapes.most_common(8):
        print(f"  {count:5d} × {len(shape):2d} pages: {', '.join(shape)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=".build-bench/release/relay-load")
    parser.add_argument("--messages", type=int, default=6000)
    parser.add_argument("--window", type=int, default=1)
    parser.add_argument("--delay", type=float, default=1.5, help="seconds of sending before the copy")
    parser.add_argument("kit", nargs="*", help="more relay-load kit arguments (after --)")
    options = parser.parse_args()

    command = [options.bin, "kit", "--messages", str(options.messages), "--window", str(options.window)]
    with tempfile.TemporaryDirectory(prefix="confidant-store-pages.") as work:
        output_path = os.path.join(work, "kit.out")
        with open(output_path, "wb") as output:
            child = subprocess.Popen(command + options.kit, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while b"sending" not in open(output_path, "rb").read():
                if child.poll() is not None or time.monotonic() > deadline:
                    sys.exit("relay-load kit did not start sending:\n" + open(output_path).read())
                time.sleep(0.2)
            time.sleep(options.delay)
            os.kill(child.pid, signal.SIGSTOP)
            try:
                stores = {}
                for fd in os.listdir(f"/proc/{child.pid}/fd"):
                    target = os.path.realpath(f"/proc/{child.pid}/fd/{fd}")
                    if target.endswith("/store.sqlite"):
                        stores[os.path.basename(os.path.dirname(target))] = os.path.dirname(target)
                copies = {}
                for profile, directory in sorted(stores.items()):
                    copy = os.path.join(work, profile)
                    os.mkdir(copy)
                    for name in ("store.sqlite", "store.sqlite-wal"):
                        shutil.copy2(os.path.join(directory, name), copy)
                    copies[profile] = copy
            finally:
                os.kill(child.pid, signal.SIGCONT)
            if not copies:
                sys.exit("found no store open in relay-load kit")
            for profile, copy in copies.items():
                report(profile, copy)
        finally:
            if child.poll() is None:
                child.terminate()
            child.wait(timeout=60)


if __name__ == "__main__":
    main()
