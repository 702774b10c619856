#!/usr/bin/env python3
"""HTTP requests that misbehave on purpose against a relay on loopback, on raw sockets so that
they can do what an HTTP library will not: stop sending a body halfway, send a bad chunk.

    http_abuse.py stall PORT TOKEN METHOD PATH CONTENT_TYPE DECLARED SENT SECONDS
    http_abuse.py bad-chunk PORT TOKEN

`stall` declares a body of DECLARED bytes, sends SENT of them and then nothing; `bad-chunk` sends
a chunked JSON body whose second chunk size is not hexadecimal. Each prints one line:
`<status line> | <error code>` (`stall`, with `after <seconds>`), `... | closed|open` (`bad-chunk`:
whether the relay ended the connection after its answer), `closed without an answer` or
`no answer after SECONDS`, and exits 0; the Swift test decides what is expected.
"""
import json, socket, sys, time


def read_answer(sock, seconds, check_close=True):
    """The status line, the Problem's error code and (`check_close`) whether the connection was
    closed after it."""
    sock.settimeout(seconds)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return f"no answer after {seconds}"
    except ConnectionResetError:
        return "reset"
    if b"\r\n\r\n" not in data:
        return "closed without an answer"
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    closed = False
    sock.settimeout(10)
    try:
        while len(body) < length:
            chunk = sock.recv(4096)
            if not chunk:
                break
            body += chunk
        closed = check_close and sock.recv(1) == b""
    except (socket.timeout, ConnectionResetError):
        closed = False
    try:
        code = json.loads(body[:length])["error"]
    except (ValueError, KeyError):
        code = "-"
    if not check_close:
        return f"{lines[0]} | {code}"
    return f"{lines[0]} | {code} | {'closed' if closed else 'open'}"


def stall(port, token, method, path, content_type, declared, sent, seconds):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall((f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                  f"Content-Type: {content_type}\r\nContent-Length: {declared}\r\n\r\n").encode() + b"{" * sent)
    start = time.monotonic()
    answer = read_answer(sock, seconds, check_close=False)
    print(answer if answer.startswith("no answer") else f"{answer} after {time.monotonic() - start:.0f}")


def bad_chunk(port, token):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall((f"PATCH /v1/account HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "2\r\n{}\r\nzz\r\n").encode())
    print(read_answer(sock, 30))


if __name__ == "__main__":
    command, port = sys.argv[1], int(sys.argv[2])
    if command == "stall":
        stall(port, sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]), int(sys.argv[8]),
              int(sys.argv[9]))
    elif command == "bad-chunk":
        bad_chunk(port, sys.argv[3])
    else:
        raise SystemExit(f"unknown command {command}")
