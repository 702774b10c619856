#!/usr/bin/env python3
"""Binary send frames (docs/PROTOCOL.md §7.2), written and read here from the document alone:

    version (1 byte, 1) ‖ count (UInt16 big-endian, 1–256) ‖ count × (length (UInt32 big-endian, ≥ 1) ‖ envelope)
    version (1 byte, 2) ‖ after (16 bytes, a message id) ‖ count ‖ count × (length ‖ envelope)

    stream_send_frame.py parse FRAME_HEX
        prints `after <uuid>` for a version 2 frame, then the envelopes of a frame, one hex line
        each, or `refused <why>`
    stream_send_frame.py send PORT DEVICE ENVELOPE_HEX…
        sends one frame with those envelopes over a real stream (raw socket, opcode 2) as DEVICE
        (see stream_abuse.py) and prints the relay's answer: its JSON frame on one line

Everything is bounded in time.
"""
import json, struct, sys, uuid

from stream_abuse import connect, frame, read_frame


def write(envelopes):
    if not 1 <= len(envelopes) <= 256 or any(len(e) == 0 for e in envelopes):
        raise ValueError("1 to 256 envelopes, none empty")
    return bytes([1]) + struct.pack(">H", len(envelopes)) + b"".join(struct.pack(">I", len(e)) + e for e in envelopes)


def parse(data):
    """(after, envelopes): after is the UUID a version 2 frame names, None for version 1."""
    if len(data) < 1:
        raise ValueError("truncated")
    if data[0] == 1:
        after, start = None, 1
    elif data[0] == 2:
        if len(data) < 17:
            raise ValueError("truncated")
        after, start = uuid.UUID(bytes=bytes(data[1:17])), 17
    else:
        raise ValueError(f"version {data[0]}")
    if len(data) < start + 2:
        raise ValueError("truncated")
    count, offset, envelopes = struct.unpack(">H", data[start:start + 2])[0], start + 2, []
    if not 1 <= count <= 256:
        raise ValueError(f"count {count}")
    for _ in range(count):
        if len(data) < offset + 4:
            raise ValueError("truncated")
        length = struct.unpack(">I", data[offset:offset + 4])[0]
        offset += 4
        if length == 0:
            raise ValueError("empty envelope")
        if len(data) < offset + length:
            raise ValueError("truncated")
        envelopes.append(data[offset:offset + length])
        offset += length
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} trailing bytes")
    return after, envelopes


def send(port, device, envelopes):
    sock, pending = connect(port, device)
    sock.sendall(frame(0x2, write(envelopes)))
    while True:
        # Long: on a loaded machine (tests in parallel, each with its relay and database) the
        # proof, the catch-up and the receipt took more than 10 s on PostgreSQL.
        opcode, payload, pending = read_frame(sock, pending, 60)
        if opcode != 0x1:
            continue
        answer = json.loads(payload)
        if "receipt" in answer or "refused" in answer or "error" in answer:
            print(json.dumps(answer, sort_keys=True))
            return


if __name__ == "__main__":
    if sys.argv[1] == "parse":
        try:
            after, envelopes = parse(bytes.fromhex(sys.argv[2]))
            if after is not None:
                print(f"after {after}")
            for envelope in envelopes:
                print(envelope.hex())
        except ValueError as error:
            print(f"refused {error}")
    elif sys.argv[1] == "send":
        send(int(sys.argv[2]), sys.argv[3], [bytes.fromhex(h) for h in sys.argv[4:]])
    else:
        raise SystemExit(f"unknown command {sys.argv[1]}")
