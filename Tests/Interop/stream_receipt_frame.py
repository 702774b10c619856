#!/usr/bin/env python3
"""Binary receipt frames (docs/PROTOCOL.md §7.4), read here from the document alone:

    kind (1 byte, 2) ‖ count (UInt16, 1–512) ‖ count × receipt
    receipt = message id (16 bytes) ‖ stored (UInt16) ‖ duplicate (1 byte, 0 or 1)
              ‖ receivedAt (Int64, milliseconds since 1970 UTC)

    Integers big-endian, nothing after the last receipt.

    stream_receipt_frame.py parse FRAME_HEX
        prints each receipt on a line: `message-id stored duplicate receivedAt`, or `refused <why>`
    stream_receipt_frame.py send PORT DEVICE ENVELOPE_HEX…
        connects as DEVICE (see stream_abuse.py) with `receipts=binary`, sends each envelope in a
        binary send frame of its own (§7.2) without waiting, reads frames until every message has
        its answer, and prints each receipt as `parse` does, then `frames N` (binary receipt
        frames read) and `text N` (text answers)

Everything is bounded in time.
"""
import json, struct, sys, uuid

from stream_abuse import connect, frame, read_frame


def parse(data):
    """The receipts: (message_id, stored, duplicate, received_at_ms)."""
    if len(data) < 3:
        raise ValueError("truncated")
    if data[0] != 2:
        raise ValueError(f"kind {data[0]}")
    count = struct.unpack(">H", data[1:3])[0]
    if not 1 <= count <= 512:
        raise ValueError(f"count {count}")
    receipts, offset = [], 3
    for _ in range(count):
        if len(data) < offset + 27:
            raise ValueError("truncated")
        message = uuid.UUID(bytes=bytes(data[offset:offset + 16]))
        stored, duplicate, received = struct.unpack(">HBq", data[offset + 16:offset + 27])
        if duplicate > 1:
            raise ValueError(f"duplicate flag {duplicate}")
        receipts.append((message, stored, duplicate == 1, received))
        offset += 27
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} trailing bytes")
    return receipts


def line(receipt):
    message, stored, duplicate, received = receipt
    return f"{message} {stored} {str(duplicate).lower()} {received}"


def send(port, device, envelopes):
    sock, pending = connect(port, device, query="&receipts=binary")
    for envelope in envelopes:
        # A version 1 send frame with one envelope (§7.2).
        sock.sendall(frame(0x2, bytes([1]) + struct.pack(">HI", 1, len(envelope)) + envelope))
    answered, frames, texts = 0, 0, 0
    while answered < len(envelopes):
        # Long: on a loaded machine the proof and the catch-up took seconds (stream_send_frame.py).
        opcode, payload, pending = read_frame(sock, pending, 60)
        if opcode == 0x2:
            frames += 1
            for receipt in parse(payload):
                answered += 1
                print(line(receipt))
        elif opcode == 0x1:
            answer = json.loads(payload)
            if "receipt" in answer or "refused" in answer or "error" in answer:
                answered += 1
                texts += 1
                print("text " + json.dumps(answer, sort_keys=True))
    print(f"frames {frames}")
    print(f"text {texts}")
    sock.close()


if __name__ == "__main__":
    if sys.argv[1] == "parse":
        try:
            for receipt in parse(bytes.fromhex(sys.argv[2])):
                print(line(receipt))
        except ValueError as error:
            print(f"refused {error}")
    elif sys.argv[1] == "send":
        send(int(sys.argv[2]), sys.argv[3], [bytes.fromhex(h) for h in sys.argv[4:]])
    else:
        raise SystemExit(f"unknown command {sys.argv[1]}")
