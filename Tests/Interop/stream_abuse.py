#!/usr/bin/env python3
"""Clients that misbehave on purpose against a relay on loopback, written on raw sockets so that
they can do what a well-behaved WebSocket library will not: send a message that never ends, stop
reading, stay silent, never answer a ping.

    stream_abuse.py huge-message PORT DEVICE MEGABYTES
    stream_abuse.py no-read PORT DEVICE FRAMES
    stream_abuse.py no-pong PORT DEVICE SECONDS
    stream_abuse.py silent PORT SECONDS
    stream_abuse.py upgrade PORT DEVICE KEY VERSION

DEVICE is `TOKEN,SIGNING_KEY_HEX,USER_ID,DEVICE_ID`: each stream first answers the relay's
challenge with the device's signature (docs/PROTOCOL.md §7.1, written here from the document), so
that what follows is tested on a stream that is open for business.

Each prints one line `closed <how> after <n>` or `open after <n>` (`upgrade`: the answer's status
line and its Sec-WebSocket-Version) and exits 0; the Swift test decides what is expected. Everything is bounded in count and time.
"""
import base64, json, os, socket, struct, sys, time, uuid

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def connect(port, device, receive_buffer=None, query=""):
    """Upgrades to /v1/stream as DEVICE and proves the device's key; returns the socket and any
    bytes read past the challenge."""
    token, key_hex, user_id, device_id = device.split(",")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /v1/stream?after=0{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Authorization: Bearer {token}\r\n\r\n")
    sock.sendall(request.encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("the server closed during the upgrade")
        response += chunk
    status = response.split(b"\r\n", 1)[0]
    if b" 101 " not in status:
        raise SystemExit(f"no upgrade: {status!r}")
    opcode, payload, pending = read_frame(sock, response.split(b"\r\n\r\n", 1)[1], 10)
    while opcode in (0x9, 0xA):  # a ping (unanswered here: no-pong relies on that) or a pong
        opcode, payload, pending = read_frame(sock, pending, 10)
    try:
        challenge = base64.b64decode(json.loads(payload)["challenge"])
    except (ValueError, KeyError):
        raise SystemExit(f"the first frame is not a challenge: opcode {opcode}, {payload[:100]!r}")
    signed = (b"Confidant device proof v1\0" + b"stream\0" + struct.pack(">H", len(challenge)) + challenge
              + uuid.UUID(user_id).bytes + uuid.UUID(device_id).bytes)
    signature = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(key_hex)).sign(signed)
    sock.sendall(frame(0x1, json.dumps({"proof": base64.b64encode(signature).decode()}).encode()))
    sock.settimeout(None)  # back to blocking: each test sets its own bounds
    return sock, pending


def read_frame(sock, data, seconds):
    """The next server frame: (opcode, payload, bytes read past it)."""
    sock.settimeout(seconds)
    while True:
        if len(data) >= 2:
            length, offset = data[1] & 0x7F, 2
            if length == 126:
                length, offset = (struct.unpack(">H", data[2:4])[0], 4) if len(data) >= 4 else (None, 4)
            elif length == 127:
                length, offset = (struct.unpack(">Q", data[2:10])[0], 10) if len(data) >= 10 else (None, 10)
            if length is not None and len(data) >= offset + length:
                return data[0] & 0x0F, data[offset:offset + length], data[offset + length:]
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("the server closed before its challenge")
        data += chunk


def frame(opcode, payload, fin=True):
    """A masked client frame."""
    header = bytes([(0x80 if fin else 0) | opcode])
    length = len(payload)
    if length < 126:
        header += bytes([0x80 | length])
    elif length < 1 << 16:
        header += bytes([0x80 | 126]) + struct.pack(">H", length)
    else:
        header += bytes([0x80 | 127]) + struct.pack(">Q", length)
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if length < 4096 else mask_fast(payload, mask)
    return header + mask + masked


def mask_fast(payload, mask):
    repeated = (mask * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


def read_close_code(sock, pending, seconds):
    """Reads frames until a close frame (its code) or the end of the connection (None)."""
    sock.settimeout(seconds)
    data = pending
    try:
        while True:
            while len(data) >= 2:
                opcode, length = data[0] & 0x0F, data[1] & 0x7F
                offset = 2
                if length == 126:
                    if len(data) < 4:
                        break
                    length, offset = struct.unpack(">H", data[2:4])[0], 4
                elif length == 127:
                    if len(data) < 10:
                        break
                    length, offset = struct.unpack(">Q", data[2:10])[0], 10
                if len(data) < offset + length:
                    break
                payload, data = data[offset:offset + length], data[offset + length:]
                if opcode == 0x8:
                    return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
    except (ConnectionResetError, BrokenPipeError):
        return None


def huge_message(port, device, megabytes):
    sock, pending = connect(port, device)
    chunk = b"x" * (1 << 16)
    sent = 0
    try:
        sock.sendall(frame(0x1, chunk, fin=False))
        sent += len(chunk)
        while sent < megabytes << 20:
            sock.sendall(frame(0x0, chunk, fin=False))
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    code = read_close_code(sock, pending, 30)
    print(f"closed {code} after {sent >> 20} MiB")


def no_read(port, device, frames):
    # A tiny receive buffer: the server's answers pile up on its side, not in this kernel.
    sock, _ = connect(port, device, receive_buffer=4096)
    sent = 0
    try:
        for _ in range(frames):
            sock.sendall(frame(0x1, b"{"))  # not JSON: every frame is answered with a problem
            sent += 1
    except (BrokenPipeError, ConnectionResetError):
        print(f"closed reset after {sent}")
        return
    # Then read: the server should have given up on this client.
    try:
        code = read_close_code(sock, b"", 30)
    except socket.timeout:
        print(f"open after {sent}")
        return
    print(f"closed {code if code is not None else 'eof'} after {sent}")


def no_pong(port, device, seconds):
    sock, pending = connect(port, device)
    start = time.monotonic()
    try:
        code = read_close_code(sock, pending, seconds)  # pings arrive and are never answered
    except socket.timeout:
        print("open after limit")
        return
    print(f"closed {code if code is not None else 'eof'} after {time.monotonic() - start:.0f}")


def silent(port, seconds):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(seconds)
    start = time.monotonic()
    try:
        data = sock.recv(1)
        print(f"closed eof after {time.monotonic() - start:.0f}" if not data else "open: data")
    except socket.timeout:
        print("open after limit")
    except ConnectionResetError:
        print(f"closed reset after {time.monotonic() - start:.0f}")


def upgrade(port, device, key, version):
    """An upgrade request with the given Sec-WebSocket-Key and -Version (`-` leaves it out)."""
    token = device.split(",")[0]
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(10)
    headers = [f"GET /v1/stream?after=0 HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket",
               "Connection: Upgrade", f"Authorization: Bearer {token}"]
    if key != "-":
        headers.append(f"Sec-WebSocket-Key: {key}")
    if version != "-":
        headers.append(f"Sec-WebSocket-Version: {version}")
    sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            break
        response += chunk
    head = response.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    offered = [line.split(":", 1)[1].strip() for line in head[1:] if line.lower().startswith("sec-websocket-version:")]
    print(f"{head[0] if head and head[0] else 'closed'} {offered[0] if offered else '-'}")


if __name__ == "__main__":
    command, port = sys.argv[1], int(sys.argv[2])
    if command == "huge-message":
        huge_message(port, sys.argv[3], int(sys.argv[4]))
    elif command == "no-read":
        no_read(port, sys.argv[3], int(sys.argv[4]))
    elif command == "no-pong":
        no_pong(port, sys.argv[3], int(sys.argv[4]))
    elif command == "silent":
        silent(port, int(sys.argv[3]))
    elif command == "upgrade":
        upgrade(port, sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        raise SystemExit(f"unknown command {command}")
