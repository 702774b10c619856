#!/usr/bin/env python3
"""Binary delivery frames (docs/PROTOCOL.md §7.3), read here from the document alone:

    version (1 byte, 1) ‖ count (UInt16, 1–256) ‖ count × entry
    entry = cursor (UInt64, 1 … 2^63 − 1) ‖ receivedAt (Int64, milliseconds since 1970 UTC)
            ‖ sender user id (16 bytes) ‖ sender device id (16) ‖ message id (16)
            ‖ length (UInt32, ≥ 1) ‖ envelope

    Integers big-endian, entries in increasing cursor order, nothing after the last one.

    stream_delivery_frame.py parse FRAME_HEX
        prints each entry on a line: `cursor receivedAt sender-user sender-device message envelope-hex`,
        or `refused <why>`
    stream_delivery_frame.py receive PORT DEVICE COUNT
        connects as DEVICE (see stream_abuse.py) with `deliveries=binary`, reads frames until COUNT
        entries have come, and prints each frame: `binary` and its entries as `parse` does, or
        `text` and the frame's JSON on one line

Everything is bounded in time.
"""
import json, struct, sys, uuid

from stream_abuse import connect, read_frame


def parse(data):
    """The entries: (cursor, received_at_ms, sender_user, sender_device, message_id, envelope)."""
    def take(offset, count):
        if len(data) < offset + count:
            raise ValueError("truncated")
        return data[offset:offset + count], offset + count

    version, offset = take(0, 1)
    if version[0] != 1:
        raise ValueError(f"version {version[0]}")
    count, offset = take(offset, 2)
    count = struct.unpack(">H", count)[0]
    if not 1 <= count <= 256:
        raise ValueError(f"count {count}")
    entries = []
    for _ in range(count):
        fixed, offset = take(offset, 8 + 8 + 48 + 4)
        cursor, received = struct.unpack(">Qq", fixed[:16])
        if not 1 <= cursor <= 2**63 - 1:
            raise ValueError(f"cursor {cursor}")
        if entries and cursor <= entries[-1][0]:
            raise ValueError("cursors out of order")
        ids = [uuid.UUID(bytes=bytes(fixed[16 + 16 * i:32 + 16 * i])) for i in range(3)]
        length = struct.unpack(">I", fixed[64:68])[0]
        if length == 0:
            raise ValueError("empty envelope")
        envelope, offset = take(offset, length)
        entries.append((cursor, received, *ids, envelope))
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} trailing bytes")
    return entries


def line(entry):
    cursor, received, user, device, message, envelope = entry
    return f"{cursor} {received} {user} {device} {message} {envelope.hex()}"


def receive(port, device, count):
    sock, pending = connect(port, device, query="&deliveries=binary")
    received = 0
    while received < count:
        # Long: on a loaded machine the proof and the catch-up took seconds (stream_send_frame.py).
        opcode, payload, pending = read_frame(sock, pending, 60)
        if opcode == 0x2:
            entries = parse(payload)
            received += len(entries)
            print("binary")
            for entry in entries:
                print(line(entry))
        elif opcode == 0x1:
            answer = json.loads(payload)
            received += len(answer.get("entries", [])) + (1 if "entry" in answer else 0)
            print("text " + json.dumps(answer, sort_keys=True))
    sock.close()


if __name__ == "__main__":
    if sys.argv[1] == "parse":
        try:
            for entry in parse(bytes.fromhex(sys.argv[2])):
                print(line(entry))
        except ValueError as error:
            print(f"refused {error}")
    elif sys.argv[1] == "receive":
        receive(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
