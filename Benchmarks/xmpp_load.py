#!/usr/bin/env python3
"""XMPP load generator for Benchmarks/ejabberd.sh: the same load shapes as `relay-load run`
against an XMPP server (ejabberd), so the two can be compared in one run.

Plain sockets (asyncio, standard library only), no XML parser: a connection signs in (SASL PLAIN,
resource binding), then senders write `<message>` stanzas and receivers count the ones that
arrive, by their numeric `id`. A sender keeps at most WINDOW messages sent to its peer and not yet
received by it (XMPP has no per-message receipt from the server, so the window closes on delivery,
one full trip later than Confidant's window, which closes on the relay's receipt).

Prints one JSON line: delivered messages/s, latency from send to receipt (p50/p99/max), the
server's CPU time (user + system, from /proc) and the generator's per message, the server's peak
resident memory, and how many messages were lost or duplicated.
"""
import argparse
import asyncio
import base64
import json
import os
import re
import resource
import statistics
import time

STREAM = (
    "<?xml version='1.0'?><stream:stream to='{host}' xmlns='jabber:client' "
    "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>"
)
ID = re.compile(rb"<message\b[^>]*? id=['\"](\d+)['\"]")


class Connection:
    def __init__(self, reader, writer):
        self.reader, self.writer, self.buffer = reader, writer, b""

    async def expect(self, marker, failure=b"<failure", timeout=30):
        """Reads until `marker`; keeps what follows it."""
        deadline = time.monotonic() + timeout
        while marker not in self.buffer:
            if failure in self.buffer:
                raise SystemExit(f"the server refused: {self.buffer[-300:]!r}")
            chunk = await asyncio.wait_for(self.reader.read(65536), max(0.1, deadline - time.monotonic()))
            if not chunk:
                raise SystemExit(f"the server closed the connection: {self.buffer[-300:]!r}")
            self.buffer += chunk
        self.buffer = self.buffer[self.buffer.index(marker) + len(marker):]

    @classmethod
    async def open(cls, port, host, user, password):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        c = cls(reader, writer)
        header = STREAM.format(host=host).encode()
        writer.write(header)
        await c.expect(b"</stream:features>")
        plain = base64.b64encode(f"\0{user}\0{password}".encode()).decode()
        writer.write(f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>".encode())
        await c.expect(b"<success")
        writer.write(header)
        await c.expect(b"</stream:features>")
        writer.write(b"<iq type='set' id='bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>"
                     b"<resource>r</resource></bind></iq>")
        await c.expect(b"</iq>")
        writer.write(b"<presence/>")
        return c


class Pair:
    def __init__(self, index, sender, receiver, peer_jid, count):
        self.index, self.sender, self.receiver, self.peer_jid = index, sender, receiver, peer_jid
        self.count = count
        self.sent_at = []
        self.latencies = []
        self.received = 0
        self.seen = set()
        self.duplicates = 0
        self.progress = asyncio.Event()

    def stanza(self, seq, body):
        return (f"<message to='{self.peer_jid}' type='chat' id='{seq}'><body>{body}</body></message>").encode()

    async def receive(self, done):
        tail = self.receiver.buffer
        self.receiver.buffer = b""
        while self.received < self.count:
            chunk = await self.receiver.reader.read(262144)
            if not chunk:
                break
            data = tail + chunk
            end = data.rfind(b"</message>")
            if end < 0:
                tail = data
                continue
            now = time.perf_counter()
            complete, tail = data[: end + 10], data[end + 10:]
            for match in ID.finditer(complete):
                seq = int(match.group(1))
                if seq in self.seen:
                    self.duplicates += 1
                    continue
                self.seen.add(seq)
                self.received += 1
                if seq < len(self.sent_at):
                    self.latencies.append(now - self.sent_at[seq])
            self.progress.set()
        done()

    async def send(self, window, interval, body, start):
        seq = 0
        while seq < self.count:
            if interval:
                due = start + seq * interval
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            while seq - self.received >= window:
                self.progress.clear()
                await self.progress.wait()
            batch = []
            limit = seq + 1 if interval else min(self.count, self.received + window)
            while seq < limit:
                self.sent_at.append(time.perf_counter())
                batch.append(self.stanza(seq, body))
                seq += 1
            self.sender.writer.write(b"".join(batch))
            await self.sender.writer.drain()


def server_cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_peak_rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, required=True, help="for its CPU time and memory")
    parser.add_argument("--host", default="localhost", help="the XMPP domain")
    parser.add_argument("--users", default="u{}", help="user name pattern; pair i is users 2i and 2i+1")
    parser.add_argument("--password", default="benchmark")
    parser.add_argument("--pairs", type=int, default=32)
    parser.add_argument("--messages", type=int, default=30000, help="in all")
    parser.add_argument("--window", type=int, default=64, help="sent and not yet received, per pair")
    parser.add_argument("--rate", type=float, help="messages/s in all (default: as fast as delivered)")
    parser.add_argument("--body-bytes", type=int, default=200)
    parser.add_argument("--label", default="ejabberd")
    args = parser.parse_args()

    per_pair = args.messages // args.pairs
    pairs = []
    for i in range(args.pairs):
        a, b = args.users.format(2 * i), args.users.format(2 * i + 1)
        sender = await Connection.open(args.port, args.host, a, args.password)
        receiver = await Connection.open(args.port, args.host, b, args.password)
        pairs.append(Pair(i, sender, receiver, f"{b}@{args.host}/r", per_pair))
    await asyncio.sleep(0.5)  # let presences and their answers pass before the clock starts
    body = ("x" * args.body_bytes)
    remaining = len(pairs)
    finished = asyncio.Event()

    def done():
        nonlocal remaining
        remaining -= 1
        if remaining == 0:
            finished.set()

    cpu0, usage0, start = server_cpu(args.server_pid), resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    interval = args.pairs / args.rate if args.rate else None
    receivers = [asyncio.create_task(p.receive(done)) for p in pairs]
    senders = [asyncio.create_task(p.send(args.window, interval, body, start)) for p in pairs]
    try:
        await asyncio.wait_for(finished.wait(), timeout=max(120, 3 * args.messages / (args.rate or 1000)))
    except asyncio.TimeoutError:
        pass
    elapsed = time.perf_counter() - start
    cpu1, usage1 = server_cpu(args.server_pid), resource.getrusage(resource.RUSAGE_SELF)
    for task in senders + receivers:
        task.cancel()
    sent = sum(len(p.sent_at) for p in pairs)
    received = sum(p.received for p in pairs)
    latencies = sorted(x for p in pairs for x in p.latencies) or [0.0]
    generator = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    print(json.dumps({
        "server": args.label,
        "pairs": args.pairs,
        "messages": sent,
        "window": args.window,
        "targetRate": args.rate,
        "deliveredPerSecond": received / elapsed,
        "p50Milliseconds": statistics.median(latencies) * 1000,
        "p99Milliseconds": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "maxMilliseconds": latencies[-1] * 1000,
        "serverCPUMicrosecondsPerMessage": (cpu1 - cpu0) / max(1, received) * 1e6,
        "generatorCPUMicrosecondsPerMessage": generator / max(1, received) * 1e6,
        "serverPeakRSSMiB": server_peak_rss_mib(args.server_pid),
        "lost": sent - received,
        "duplicated": sum(p.duplicates for p in pairs),
    }))
    for p in pairs:
        for c in (p.sender, p.receiver):
            c.writer.write(b"</stream:stream>")
            c.writer.close()


if __name__ == "__main__":
    asyncio.run(main())
