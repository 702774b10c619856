#!/usr/bin/env python3
"""docs/PROTOCOL.md §10 (groups) implemented independently in Python (cryptography): reads the
membership changes, the sender-key message, the group envelope (v3), the shared send frame and
the sender key and reaction payloads Swift wrote, and writes a change, a message, a reaction, a
group envelope and a shared frame for Swift to read.

usage: group_interop.py VECTORS.json OUTPUT.json
VECTORS holds {"changes": [hex…], "digests": [hex…], "actions": [name…], "author_public": {device
hex: Ed25519 public hex}, "distribution": hex, "message": hex, "plaintext": text, "sending_chain": hex
(stored, §10.4), "writer": {"user": hex, "device": hex, "private": Ed25519 private hex},
"skip_to": int, "group_envelope", "shared_frame", "recipients", "sender_key_payload", "reaction",
"reaction_emoji", "reaction_removal", "group_reply"}. OUTPUT gets
{"change", "payload", "group_message", "group_reply", "reaction", "message", "plaintext", "group_envelope",
"shared_frame"}. Exits 1 on any
mismatch.
"""
import hashlib, hmac, json, os, struct, sys

from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

CHANGE_CONTEXT = b"Confidant group change v1\0"
SENDER_CONTEXT = b"Confidant sender key v1\0"
ACTIONS = {1: "create", 2: "add", 3: "remove", 4: "leave", 5: "promote", 6: "demote", 7: "rename",
           8: "picture", 9: "timer"}
passed = failed = 0


def check(name, ok):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", name)


def read_users(body, at):
    (n,) = struct.unpack_from(">H", body, at)
    users = [body[at + 2 + 16 * i: at + 18 + 16 * i] for i in range(n)]
    assert len(set(users)) == n and at + 2 + 16 * n <= len(body)
    return users, at + 2 + 16 * n


def parse_change(data):
    """§10.2: the fields, the action, and whether the layout holds; the signature is checked apart."""
    assert data[0] == 1
    group, change_id = data[1:17], data[17:33]
    (number,) = struct.unpack_from(">I", data, 33)
    parent = data[37:69]
    author_user, author_device = data[69:85], data[85:101]
    (time_ms,) = struct.unpack_from(">Q", data, 101)
    action = data[109]
    (length,) = struct.unpack_from(">H", data, 110)
    body = data[112:112 + length]
    signature = data[112 + length:]
    assert len(body) == length and len(signature) == 64
    if action in (1, 7):
        name = body[1:1 + body[0]].decode("utf-8")
        assert 1 <= body[0] <= 128
        detail = name
        if action == 1:
            users, end = read_users(body, 1 + body[0])
            assert end == len(body) and author_user not in users
            detail = (name, users)
    elif action in (2, 3):
        detail, end = read_users(body, 0)
        assert end == len(body) and detail
    elif action in (5, 6):
        assert len(body) == 16
        detail = body
    elif action == 8:
        assert len(body) in (0, 32)
        detail = body
    elif action == 9:
        (detail,) = struct.unpack(">I", body)
    else:
        assert action == 4 and not body
        detail = None
    if action == 1:
        assert number == 1 and parent == bytes(32)
    else:
        assert number >= 2 and parent != bytes(32)
    return {"group": group, "number": number, "parent": parent, "user": author_user,
            "device": author_device, "action": ACTIONS[action], "detail": detail,
            "signed": data[:-64], "signature": signature, "digest": hashlib.sha256(data).digest()}


def make_change(group, number, parent, user, device, action, body, private):
    unsigned = (bytes([1]) + group + os.urandom(16) + struct.pack(">I", number) + parent + user + device
                + struct.pack(">Q", 1_764_633_600_000) + bytes([action]) + struct.pack(">H", len(body)) + body)
    return unsigned + private.sign(CHANGE_CONTEXT + unsigned)


def padme(length):
    if length < 2:
        return length
    e = length.bit_length() - 1
    s = e.bit_length()
    mask = (1 << (e - s)) - 1
    return (length + mask) & ~mask


def pad(message):
    total = max(32, padme(4 + len(message)))
    return struct.pack(">I", len(message)) + message + bytes(total - 4 - len(message))


def unpad(padded):
    (length,) = struct.unpack_from(">I", padded)
    assert 4 + length <= len(padded) and not any(padded[4 + length:])
    assert len(padded) == max(32, padme(4 + length))
    return padded[4:4 + length]


def chain_step(chain_key):
    return (hmac.new(chain_key, b"\x01", hashlib.sha256).digest(),
            hmac.new(chain_key, b"\x02", hashlib.sha256).digest())


def cipher_keys(message_key):
    out = HKDF(algorithm=hashes.SHA256(), length=44, salt=None,
               info=b"Confidant sender key message v1").derive(message_key)
    return AESGCM(out[:32]), out[32:]


def open_message(distribution, data):
    assert distribution[0] == 1 and len(distribution) == 101
    chain_id, (iteration,), chain_key = distribution[17:33], struct.unpack_from(">I", distribution, 33), distribution[37:69]
    public = ed25519.Ed25519PublicKey.from_public_bytes(distribution[69:101])
    assert data[0] == 1 and data[1:17] == chain_id
    (number, length) = struct.unpack_from(">II", data, 17)
    assert len(data) == 25 + length + 64
    public.verify(data[-64:], SENDER_CONTEXT + data[:-64])
    assert number >= iteration
    for _ in range(number - iteration):
        _, chain_key = chain_step(chain_key)
    message_key, _ = chain_step(chain_key)
    aead, nonce = cipher_keys(message_key)
    return unpad(aead.decrypt(nonce, data[25:25 + length], data[:25]))


def seal_message(stored, skip_to, plaintext):
    """Seals with a stored sending chain (§10.4) at iteration `skip_to` (skipping those before)."""
    assert stored[0] == 1 and len(stored) == 101
    chain_id, (iteration,), chain_key = stored[17:33], struct.unpack_from(">I", stored, 33), stored[37:69]
    private = ed25519.Ed25519PrivateKey.from_private_bytes(stored[69:101])
    for _ in range(skip_to - iteration):
        _, chain_key = chain_step(chain_key)
    message_key, _ = chain_step(chain_key)
    aead, nonce = cipher_keys(message_key)
    padded = pad(plaintext)
    header = bytes([1]) + chain_id + struct.pack(">II", skip_to, len(padded) + 16)
    body = header + aead.encrypt(nonce, padded, header)
    return body + private.sign(SENDER_CONTEXT + body)


def main():
    vectors = json.load(open(sys.argv[1]))
    keys = {bytes.fromhex(device): ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(key))
            for device, key in vectors["author_public"].items()}
    parsed = []
    for index, text in enumerate(vectors["changes"]):
        change = parse_change(bytes.fromhex(text))
        parsed.append(change)
        check(f"change {index} action", change["action"] == vectors["actions"][index])
        check(f"change {index} digest", change["digest"].hex() == vectors["digests"][index])
        try:
            keys[change["device"]].verify(change["signature"], CHANGE_CONTEXT + change["signed"])
            check(f"change {index} signature", True)
        except Exception:
            check(f"change {index} signature", False)
        if index:
            check(f"change {index} parent", change["parent"] == parsed[index - 1]["digest"]
                  and change["number"] == parsed[index - 1]["number"] + 1)
    tampered = bytearray(bytes.fromhex(vectors["changes"][0]))
    tampered[120] ^= 1
    try:
        change = parse_change(bytes(tampered))
        keys[change["device"]].verify(change["signature"], CHANGE_CONTEXT + change["signed"])
        check("a tampered change fails", False)
    except Exception:
        check("a tampered change fails", True)

    # Payload kind 7 (§8): version 1, kind 7, the group id, then u16 n and n × (u16 length | change).
    payload = bytes.fromhex(vectors["payload"])
    check("Swift's payload is kind 7 for the group", payload[:2] == bytes([1, 7]) and payload[2:18] == parsed[0]["group"])
    count, at, listed = struct.unpack(">H", payload[18:20])[0], 20, []
    for _ in range(count):
        (length,) = struct.unpack(">H", payload[at:at + 2])
        listed.append(payload[at + 2:at + 2 + length])
        at += 2 + length
    check("its changes are the history, in order, with nothing after",
          at == len(payload) and [c.hex() for c in listed] == vectors["changes"])

    # Payload kind 8 (§8): a message to the group, JSON {"messageId", "text"}.
    said = bytes.fromhex(vectors["group_message"])
    body = json.loads(said[18:].decode("utf-8"))
    check("Swift's group message payload", said[:2] == bytes([1, 8]) and said[2:18] == parsed[0]["group"]
          and body["text"] == vectors["group_message_text"] and body["messageId"].lower() == vectors["group_message_id"])

    # A reply in a group: kind 8 with "replyTo" {"messageId", "excerpt"}, as a kind 2 reply has it.
    said = bytes.fromhex(vectors["group_reply"])
    body = json.loads(said[18:].decode("utf-8"))
    check("Swift's group reply payload (kind 8, replyTo)", said[:2] == bytes([1, 8])
          and body["text"] == "yes, at 7" and body["replyTo"]["excerpt"] == vectors["group_message_text"]
          and body["replyTo"]["messageId"].lower() == vectors["group_message_id"])

    # Payload kind 10 (§8): a reaction, JSON {"messageId", "emoji"?}; no emoji takes it back.
    for key, emoji in (("reaction", vectors["reaction_emoji"]), ("reaction_removal", None)):
        said = bytes.fromhex(vectors[key])
        body = json.loads(said[18:].decode("utf-8"))
        check(f"Swift's {key.replace('_', ' ')} payload (kind 10)",
              said[:2] == bytes([1, 10]) and said[2:18] == parsed[0]["group"]
              and body["messageId"].lower() == vectors["group_message_id"] and body.get("emoji") == emoji)

    opened = open_message(bytes.fromhex(vectors["distribution"]), bytes.fromhex(vectors["message"]))
    check("Swift's group message opens", opened.decode("utf-8") == vectors["plaintext"])

    # Envelope v3 (§10.4): a 58-byte header, then a sender-key message whose plaintext starts
    # with the same header; the rest is the kind 8 payload. Then the shared frame (§7.2 version 3).
    distribution = bytes.fromhex(vectors["distribution"])
    envelope = bytes.fromhex(vectors["group_envelope"])
    header = envelope[:58]
    check("Swift's group envelope header", header[:2] == bytes([3, 0]) and len(envelope) > 58)
    inner = open_message(distribution, envelope[58:])
    check("its plaintext repeats the header", inner[:58] == header)
    said = inner[58:]
    body = json.loads(said[18:].decode("utf-8"))
    check("and carries the group message under the envelope's id",
          said[:2] == bytes([1, 8]) and said[2:18] == parsed[0]["group"]
          and body["messageId"].replace("-", "").lower() == header[34:50].hex())
    frame = bytes.fromhex(vectors["shared_frame"])
    (count,) = struct.unpack_from(">H", frame, 17)
    listed = [frame[19 + 32 * i: 51 + 32 * i].hex() for i in range(count)]
    (length,) = struct.unpack_from(">I", frame, 19 + 32 * count)
    check("Swift's shared frame", frame[0] == 3 and frame[1:17] == header[34:50] and listed == vectors["recipients"]
          and frame[23 + 32 * count:] == envelope and length == len(envelope))
    key_payload = bytes.fromhex(vectors["sender_key_payload"])
    check("Swift's sender key payload (kind 9)", key_payload[:2] == bytes([1, 9])
          and key_payload[2:18] == parsed[0]["group"] and key_payload[18:] == distribution)

    writer = vectors["writer"]
    last = parsed[-1]
    name = "Named in Python".encode("utf-8")
    change = make_change(last["group"], last["number"] + 1, last["digest"], bytes.fromhex(writer["user"]),
                         bytes.fromhex(writer["device"]), 7, bytes([len(name)]) + name,
                         ed25519.Ed25519PrivateKey.from_private_bytes(bytes.fromhex(writer["private"])))
    check("Python's change reads back", parse_change(change)["action"] == "rename")
    plaintext = "from Python, é"
    message = seal_message(bytes.fromhex(vectors["sending_chain"]), vectors["skip_to"], plaintext.encode("utf-8"))
    said = bytes([1, 8]) + last["group"] + json.dumps(
        {"messageId": "0192d7e0-0000-7000-8000-00000000000b", "text": "Python, once for all"}).encode("utf-8")
    group_header = (bytes([3, 0]) + header[2:34] + bytes.fromhex("0192d7e000007000800000000000000b")
                    + struct.pack(">Q", 1_764_633_600_456))
    group_envelope = group_header + seal_message(bytes.fromhex(vectors["sending_chain"]), vectors["skip_to"] + 1,
                                                 group_header + said)
    shared = (bytes([3]) + bytes(16) + struct.pack(">H", count) + b"".join(bytes.fromhex(r) for r in listed)
              + struct.pack(">I", len(group_envelope)) + group_envelope)
    reply = bytes([1, 8]) + last["group"] + json.dumps(
        {"messageId": "0192d7e0-0000-7000-8000-00000000000a", "text": "Python says hi ✓"}).encode("utf-8")
    group_reply = bytes([1, 8]) + last["group"] + json.dumps(
        {"messageId": "0192d7e0-0000-7000-8000-00000000000c", "text": "answered in Python",
         "replyTo": {"messageId": vectors["group_message_id"], "excerpt": vectors["group_message_text"]}},
        ensure_ascii=False).encode("utf-8")
    reaction = bytes([1, 10]) + last["group"] + json.dumps(
        {"messageId": "0192d7e0-0000-7000-8000-00000000000a", "emoji": "🎉"}, ensure_ascii=False).encode("utf-8")
    written = bytes([1, 7]) + last["group"] + struct.pack(">H", 1) + struct.pack(">H", len(change)) + change
    json.dump({"change": change.hex(), "payload": written.hex(), "group_message": reply.hex(),
               "group_reply": group_reply.hex(), "reaction": reaction.hex(), "message": message.hex(), "plaintext": plaintext,
               "group_envelope": group_envelope.hex(), "shared_frame": shared.hex()},
              open(sys.argv[2], "w"))
    print(f"group_interop: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
