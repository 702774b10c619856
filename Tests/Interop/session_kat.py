#!/usr/bin/env python3
"""docs/PROTOCOL.md §9 (envelope v2) implemented independently in Python (cryptography):
rebuilds the known-answer session of Tests/ConfidantCryptoTests/SessionVectorTests.swift from
its fixed keys and compares, byte for byte, with what the Swift code produced.

usage: session_kat.py VECTORS.json
The JSON holds the Swift outputs to check, {"first": hex, "reply": hex, "root": hex}, the X-Wing
ciphertext of the first test vector of draft-connolly-cfrg-xwing-kem-06, and the identities' X-Wing
public keys, which this script derives itself from their seeds (X-Wing as interop.py implements
it, with `cryptography`'s ML-KEM-768) and compares. The draft vector itself is checked too: its
seed's public key and its ciphertext's shared secret. Exits 1 on any mismatch.
"""
import hashlib, hmac, json, os, struct, sys, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop import xwing_decaps, xwing_expand  # noqa: E402  (X-Wing draft-06, written from the draft)

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

XWING_SS = bytes.fromhex("d2df0522128f09dd8e2c92b1e905c793d8f57a54c3da25861f10bf4ca613e384")
XWING_SEED = bytes.fromhex("7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26")
XWING_PUBLIC_SHA256 = "2e816deebcd76c5c80d0cd2d174478871658e8e2ff42bc9d4a6e486372e856bb"
RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def hkdf(ikm, salt, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def x25519_private(raw):
    return x25519.X25519PrivateKey.from_private_bytes(raw)


def x25519_public(key):
    return key.public_key().public_bytes(*RAW)


def dh(private, public_raw):
    return private.exchange(x25519.X25519PublicKey.from_public_bytes(public_raw))


def identity_without_signature(fill, device, xwing_public):
    """§1 layout minus the 64-byte signature: keys from fixed bytes, as the Swift test makes them."""
    signing = ed25519.Ed25519PrivateKey.from_private_bytes(bytes([fill]) * 32).public_key().public_bytes(*RAW)
    p256 = ec.derive_private_key(int.from_bytes(bytes([fill + 1]) * 32, "big"), ec.SECP256R1()).public_key()
    p256 = p256.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    agreement = x25519_public(x25519_private(bytes([fill + 2]) * 32))
    return bytes([1]) + uuid.UUID(device).bytes + signing + p256 + agreement + xwing_public


class FixedEntropy:
    """SessionEntropy.fixed: the n-th key is HKDF-SHA256(seed, info = "key" ‖ u32 n)."""
    def __init__(self, fill):
        self.seed, self.n = bytes([fill]) * 32, 0

    def new_key(self):
        self.n += 1
        return x25519_private(hkdf(self.seed, None, b"key" + struct.pack(">I", self.n), 32))


def kdf_rk(rk, dh_out):
    out = hkdf(dh_out, rk, b"Confidant ratchet root v1", 64)
    return out[:32], out[32:]


def kdf_ck(ck):
    return hmac.new(ck, b"\x01", hashlib.sha256).digest(), hmac.new(ck, b"\x02", hashlib.sha256).digest()


def pad(message):
    """§3.3 Padmé framing."""
    framed = 4 + len(message)
    length = framed
    if framed >= 2:
        e = framed.bit_length() - 1
        s = e.bit_length()
        mask = (1 << (e - s)) - 1
        length = (framed + mask) & ~mask
    total = max(32, length)
    return struct.pack(">I", len(message)) + message + bytes(total - framed)


def seal(ad, ck, prefix, message):
    mk, next_ck = kdf_ck(ck)
    keys = hkdf(mk, None, b"Confidant ratchet message v1", 44)
    sealed = AESGCM(keys[:32]).encrypt(keys[32:], pad(message), ad + prefix)
    return prefix + struct.pack(">I", len(sealed)) + sealed, next_ck


def addressing(flags, sender, recipient, message_id, millis):
    out = bytes([2, flags])
    for user, device in (sender, recipient):
        out += uuid.UUID(user).bytes + uuid.UUID(device).bytes
    return out + uuid.UUID(message_id).bytes + struct.pack(">Q", millis)


def main():
    vectors = json.load(open(sys.argv[1]))
    alice_user, bob_user = "00000000-0000-4000-8000-00000000a11c", "00000000-0000-4000-8000-000000000b0b"
    alice_device, bob_device = "00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000b1"
    alice_xwing = xwing_expand(bytes([0x01 + 3]) * 32)[2]
    bob_xwing = xwing_expand(bytes([0x11 + 3]) * 32)[2]
    alice_id = identity_without_signature(0x01, alice_device, alice_xwing)
    bob_id = identity_without_signature(0x11, bob_device, bob_xwing)
    ad = hashlib.sha256(b"Confidant session v1\0" + alice_id + bob_id).digest()
    alice_x = x25519_private(bytes([0x03]) * 32)
    bob_x_public = x25519_public(x25519_private(bytes([0x13]) * 32))
    spk = x25519_private(bytes([0x21]) * 32)
    opk = x25519_private(bytes([0x23]) * 32)
    alice_entropy, bob_entropy = FixedEntropy(0x31), FixedEntropy(0x41)
    # Tests/ConfidantCryptoTests/SessionVectorTests.swift: the X-Wing ciphertext, from the draft vector.
    ct = bytes.fromhex(vectors["xwing_ciphertext"])

    # §9.2: Alice starts.
    base = alice_entropy.new_key()
    secrets = b"\xff" * 32 + dh(alice_x, x25519_public(spk)) + dh(base, bob_x_public) + dh(base, x25519_public(spk))
    secrets += dh(base, x25519_public(opk)) + XWING_SS
    sk = hkdf(secrets, bytes(32), b"Confidant PQXDH v1 X25519 X-Wing SHA-256", 32)
    ratchet = alice_entropy.new_key()
    alice_rk, alice_ck = kdf_rk(sk, dh(ratchet, x25519_public(spk)))
    start = x25519_public(base) + struct.pack(">III", 1, 2, 3) + ct
    prefix = addressing(1, (alice_user, alice_device), (bob_user, bob_device), "00000000-0000-4000-8000-000000000001",
                        1_800_000_000_250) + start + x25519_public(ratchet) + struct.pack(">II", 0, 0)
    first, _ = seal(ad, alice_ck, prefix, b"Hello, Bob")

    # §9.3: Bob receives (one DH step) and answers from a fresh ratchet key.
    bob_rk, _bob_ckr = kdf_rk(sk, dh(spk, x25519_public(ratchet)))
    bob_ratchet = bob_entropy.new_key()
    bob_rk, bob_cks = kdf_rk(bob_rk, dh(bob_ratchet, x25519_public(ratchet)))
    prefix = addressing(0, (bob_user, bob_device), (alice_user, alice_device), "00000000-0000-4000-8000-000000000002",
                        1_800_000_000_250) + x25519_public(bob_ratchet) + struct.pack(">II", 0, 0)
    reply, _ = seal(ad, bob_cks, prefix, b"Hi Alice")

    # Alice receives the reply: her root key after the step and her new ratchet key.
    alice_rk, _ = kdf_rk(alice_rk, dh(ratchet, x25519_public(bob_ratchet)))
    alice_rk, _ = kdf_rk(alice_rk, dh(alice_entropy.new_key(), x25519_public(bob_ratchet)))

    draft_public = hashlib.sha256(xwing_expand(XWING_SEED)[2]).hexdigest()
    checks = (("first", first.hex(), vectors["first"]), ("reply", reply.hex(), vectors["reply"]),
              ("root", alice_rk.hex(), vectors["root"]),
              ("alice's X-Wing key from its seed", alice_xwing.hex(), vectors["alice_xwing"]),
              ("bob's X-Wing key from its seed", bob_xwing.hex(), vectors["bob_xwing"]),
              ("X-Wing draft-06 vector: public key", draft_public, XWING_PUBLIC_SHA256),
              ("X-Wing draft-06 vector: shared secret", xwing_decaps(XWING_SEED, ct).hex(), XWING_SS.hex()))
    failed = 0
    for name, ours, theirs in checks:
        same = ours == theirs
        failed += not same
        print(f"{'ok' if same else 'MISMATCH'}: {name}")
    print(f"session_kat: {len(checks) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
