#!/usr/bin/env python3
"""An independent implementation of docs/PROTOCOL.md (Python: pyhpke + cryptography),
run against the `confidant` CLI: each side seals what the other opens.

usage: interop.py PATH/TO/confidant
Prints one line per check and a closing 'interop: N passed, N failed'; exits 1 on any failure.
"""
import base64, hashlib, hmac, os, shutil, struct, subprocess, sys, tempfile, uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mlkem, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

INFO = b"Confidant envelope v1"
SIG_CONTEXT = b"Confidant envelope v1 signature\0"
ID_CONTEXT = b"Confidant identity v1\0"
SUITES = {
    0x01: CipherSuite.new(KEMId.DHKEM_P256_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES256_GCM),
    0x02: CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.CHACHA20_POLY1305),
}
NAMES = {0x01: "p256-aesgcm", 0x02: "x25519-chachapoly", 0x03: "xwing-aesgcm", 0xF0: "seed-legacy"}


# ---- §1 public identity -------------------------------------------------------------------
class PublicIdentity:
    def __init__(self, pem: str):
        body = "".join(l for l in pem.strip().splitlines() if not l.startswith("-----"))
        assert pem.strip().startswith("-----BEGIN CONFIDANT PUBLIC IDENTITY-----")
        raw = base64.b64decode(body)
        assert len(raw) == 1426 and raw[0] == 1, "identity length/version"
        self.raw = raw
        self.device_id = raw[1:17]
        self.signing_raw = raw[17:49]
        self.signing = ed25519.Ed25519PublicKey.from_public_bytes(raw[17:49])
        self.p256 = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw[49:114])
        self.x25519 = x25519.X25519PublicKey.from_public_bytes(raw[114:146])
        self.xwing = raw[146:1362]
        self.signing.verify(raw[1362:], ID_CONTEXT + raw[:1362])  # raises on a bad signature


# ---- §2 private key file ------------------------------------------------------------------
class PrivateIdentity:
    def __init__(self, data: bytes, passphrase: str):
        assert data[:8] == b"CONFKEY\x01" and data[8] == 1
        log2n, r, p = data[9], *struct.unpack(">II", data[10:18])
        salt, nonce = data[18:34], data[34:46]
        key = hashlib.scrypt(passphrase.encode(), salt=salt, n=1 << log2n, r=r, p=p, maxmem=256 << 20, dklen=32)
        secret = AESGCM(key).decrypt(nonce, data[46:], data[:46])
        assert len(secret) == 144
        self.device_id = secret[:16]
        self.signing = ed25519.Ed25519PrivateKey.from_private_bytes(secret[16:48])
        self.p256 = ec.derive_private_key(int.from_bytes(secret[48:80], "big"), ec.SECP256R1())
        self.x25519 = x25519.X25519PrivateKey.from_private_bytes(secret[80:112])
        self.xwing_seed = secret[112:144]
        self.secret = secret

    @staticmethod
    def write(secret: bytes, passphrase: str, log2n: int = 10) -> bytes:
        """A key file (§2) for these 144 bytes of keys, as `keys generate` writes one."""
        salt, nonce = os.urandom(16), os.urandom(12)
        header = b"CONFKEY\x01" + bytes([1, log2n]) + struct.pack(">II", 8, 1) + salt + nonce
        key = hashlib.scrypt(passphrase.encode(), salt=salt, n=1 << log2n, r=8, p=1, maxmem=256 << 20, dklen=32)
        return header + AESGCM(key).encrypt(nonce, secret, header)


# ---- X-Wing (draft-connolly-cfrg-xwing-kem-06) and HPKE Base mode (RFC 9180) ---------------
XWING_LABEL = bytes([0x5C, 0x2E, 0x2F, 0x2F, 0x5E, 0x5C])  # \.//^\


def xwing_expand(seed: bytes):
    expanded = hashlib.shake_256(seed).digest(96)
    kem = mlkem.MLKEM768PrivateKey.from_seed_bytes(expanded[:64])
    dh = x25519.X25519PrivateKey.from_private_bytes(expanded[64:96])
    return kem, dh, kem.public_key().public_bytes_raw() + dh.public_key().public_bytes_raw()


def xwing_combine(ss_m, ss_x, ct_x, pk_x):
    return hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + XWING_LABEL).digest()


def xwing_encaps(public: bytes):
    pk_m, pk_x = public[:1184], public[1184:]
    ephemeral = x25519.X25519PrivateKey.generate()
    ct_x = ephemeral.public_key().public_bytes_raw()
    ss_x = ephemeral.exchange(x25519.X25519PublicKey.from_public_bytes(pk_x))
    ss_m, ct_m = mlkem.MLKEM768PublicKey.from_public_bytes(pk_m).encapsulate()
    return xwing_combine(ss_m, ss_x, ct_x, pk_x), ct_m + ct_x


def xwing_decaps(seed: bytes, ct: bytes):
    kem, dh, public = xwing_expand(seed)
    ct_x = ct[1088:]
    ss_x = dh.exchange(x25519.X25519PublicKey.from_public_bytes(ct_x))
    return xwing_combine(kem.decapsulate(ct[:1088]), ss_x, ct_x, public[1184:])


HPKE_XWING_SUITE = b"HPKE" + struct.pack(">HHH", 0x647A, 0x0001, 0x0002)


def hpke_base_key_schedule(shared_secret: bytes, info: bytes):
    def extract(salt, label, ikm):
        return hmac.new(salt or bytes(32), b"HPKE-v1" + HPKE_XWING_SUITE + label + ikm, hashlib.sha256).digest()

    def expand(prk, label, context, length):
        labeled = struct.pack(">H", length) + b"HPKE-v1" + HPKE_XWING_SUITE + label + context
        out, block, counter = b"", b"", 1
        while len(out) < length:
            block = hmac.new(prk, block + labeled + bytes([counter]), hashlib.sha256).digest()
            out += block
            counter += 1
        return out[:length]

    context = bytes([0]) + extract(b"", b"psk_id_hash", b"") + extract(b"", b"info_hash", info)
    secret = extract(shared_secret, b"secret", b"")
    return expand(secret, b"key", context, 32), expand(secret, b"base_nonce", context, 12)


# ---- §3 envelopes -------------------------------------------------------------------------
def padme(length: int) -> int:
    if length < 2:
        return length
    e = length.bit_length() - 1
    s = e.bit_length()
    z = e - s
    mask = (1 << z) - 1
    return (length + mask) & ~mask


def pad(message: bytes) -> bytes:
    total = max(32, padme(4 + len(message)))
    return struct.pack(">I", len(message)) + message + bytes(total - 4 - len(message))


def unpad(padded: bytes) -> bytes:
    (length,) = struct.unpack(">I", padded[:4])
    assert length <= len(padded) - 4 and not any(padded[4 + length:]), "bad padding"
    assert len(padded) == max(32, padme(4 + length)), "not Padmé's size"
    return padded[4:4 + length]


def hpke_keys(suite, private: PrivateIdentity):
    return KEMKey.from_pyca_cryptography_key(private.p256 if suite == 1 else private.x25519)


def hpke_public(suite, identity: PublicIdentity):
    return KEMKey.from_pyca_cryptography_key(identity.p256 if suite == 1 else identity.x25519)


def parse_envelope(data: bytes):
    version, suite, flags = data[0], data[1], data[2]
    assert version == 1 and flags & ~1 == 0
    header = data[:91]
    ids = [data[3 + 16 * i: 19 + 16 * i] for i in range(5)]
    (timestamp,) = struct.unpack(">Q", data[83:91])
    (enc_len,) = struct.unpack(">H", data[91:93])
    enc = data[93:93 + enc_len]
    offset = 93 + enc_len
    (ct_len,) = struct.unpack(">I", data[offset:offset + 4])
    ct = data[offset + 4: offset + 4 + ct_len]
    end = offset + 4 + ct_len
    signature = data[end:end + 64] if flags & 1 else None
    assert len(data) == end + (64 if signature else 0), "trailing bytes"
    return dict(suite=suite, header=header, ids=ids, timestamp=timestamp, enc=enc, ct=ct,
                signature=signature, unsigned=data[:end])


def open_envelope(data: bytes, me: PrivateIdentity, my_user: bytes, sender: PublicIdentity) -> bytes:
    env = parse_envelope(data)
    assert env["ids"][2] == my_user and env["ids"][3] == me.device_id, "not for this recipient"
    assert env["ids"][1] == sender.device_id, "sender mismatch"
    if env["suite"] == 0x03:
        assert env["signature"], "signature required"
    if env["signature"]:
        sender.signing.verify(env["signature"], SIG_CONTEXT + env["unsigned"])
    if env["suite"] == 0xF0:
        return sblock(env["ct"], seed_key_string(me.p256, sender.p256).encode())
    if env["suite"] == 0x03:
        key, nonce = hpke_base_key_schedule(xwing_decaps(me.xwing_seed, env["enc"]), INFO)
        return unpad(AESGCM(key).decrypt(nonce, env["ct"], env["header"]))
    suite = SUITES[env["suite"]]
    ctx = suite.create_recipient_context(env["enc"], hpke_keys(env["suite"], me), info=INFO,
                                         pks=hpke_public(env["suite"], sender))
    return unpad(ctx.open(env["ct"], aad=env["header"]))


def seal_envelope(message: bytes, suite_id: int, me: PrivateIdentity, my_user: bytes,
                  to: PublicIdentity, to_user: bytes, signed: bool) -> bytes:
    header = bytes([1, suite_id, 1 if signed else 0]) + my_user + me.device_id + to_user + to.device_id \
        + uuid.uuid4().bytes + struct.pack(">Q", 1_750_000_000_000)
    if suite_id == 0xF0:
        enc, ct = b"", sblock(message, seed_key_string(me.p256, to.p256).encode())
    elif suite_id == 0x03:
        shared, enc = xwing_encaps(to.xwing)
        key, nonce = hpke_base_key_schedule(shared, INFO)
        ct = AESGCM(key).encrypt(nonce, pad(message), header)
    else:
        suite = SUITES[suite_id]
        enc, ctx = suite.create_sender_context(hpke_public(suite_id, to), info=INFO, sks=hpke_keys(suite_id, me))
        ct = ctx.seal(pad(message), aad=header)
    body = header + struct.pack(">H", len(enc)) + enc + struct.pack(">I", len(ct)) + ct
    if signed:
        body += me.signing.sign(SIG_CONTEXT + body)
    return body


# ---- §4 seed formats ----------------------------------------------------------------------
def sblock(data: bytes, key: bytes) -> bytes:
    s = list(range(256))
    j = 0
    for i in range(256):
        j = ((256 - j) + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    j, out = 0, bytearray()
    for n, byte in enumerate(data):
        i = n % 256
        j = (s[i] + (256 % (j + 1))) % 256
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


def seed_key_string(private, public) -> str:
    shared = private.exchange(ec.ECDH(), public)
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"salt for key", info=b"").derive(shared)
    return base64.b64encode(key).decode()


def seed_encode(raw: bytes) -> str:
    return "".join(c if c.isascii() and c.isalnum() else "%%%02X" % ord(c) for c in base64.b64encode(raw).decode())


# ---- §5 safety numbers --------------------------------------------------------------------
def safety_half(identity: PublicIdentity) -> str:
    h = hashlib.sha512(b"\0\0" + identity.signing_raw + identity.device_id).digest()
    for _ in range(5200):
        h = hashlib.sha512(h + identity.signing_raw).digest()
    return "".join("%05d" % (int.from_bytes(h[i:i + 5], "big") % 100000) for i in range(0, 30, 5))


# ---- the checks ---------------------------------------------------------------------------
def main() -> int:
    binary = os.path.abspath(sys.argv[1])
    passed = failed = 0
    work = tempfile.mkdtemp(prefix="confidant-interop-")
    env = dict(os.environ, CONFIDANT_PASSPHRASE="interop passphrase")

    def cli(*args, stdin=b""):
        return subprocess.run([binary, *args], input=stdin, capture_output=True, env=env, cwd=work)

    def check(name, condition, detail=""):
        nonlocal passed, failed
        if condition:
            passed += 1
            print(f"ok    {name}")
        else:
            failed += 1
            print(f"FAIL  {name} {detail}")

    for who in ("alice", "bob"):
        result = cli("keys", "generate", "--out", f"{who}.key", "--scrypt-log2n", "10")
        check(f"keygen {who}", result.returncode == 0, result.stderr.decode())
    read = lambda name: open(os.path.join(work, name), "rb").read()
    alice_pub, bob_pub = PublicIdentity(read("alice.key.pub").decode()), PublicIdentity(read("bob.key.pub").decode())
    alice = PrivateIdentity(read("alice.key"), env["CONFIDANT_PASSPHRASE"])
    bob = PrivateIdentity(read("bob.key"), env["CONFIDANT_PASSPHRASE"])
    check("key file decrypts to the identity's keys",
          bob.p256.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
          == bob_pub.raw[49:114] and bob.device_id == bob_pub.device_id)
    nil = bytes(16)
    check("the X-Wing seed expands to the identity's X-Wing public key (draft-06)",
          xwing_expand(bob.xwing_seed)[2] == bob_pub.xwing)

    # A key file written here opens in the CLI: it seals with it, and Python opens that.
    with open(os.path.join(work, "carol.key"), "wb") as f:
        f.write(PrivateIdentity.write(alice.secret, env["CONFIDANT_PASSPHRASE"]))
    result = cli("keys", "seal", "--from", "carol.key", "--to", "bob.key.pub", "--sign", stdin=b"from a python key file")
    try:
        opened = open_envelope(result.stdout, bob, nil, alice_pub)
    except Exception as error:  # noqa: BLE001
        opened = repr(error).encode() + result.stderr
    check("swift seals with a key file python wrote", opened == b"from a python key file", opened[:120])

    for suite_id in (0x01, 0x02, 0x03, 0xF0):
        for signed in (False, True):
            if suite_id == 0x03 and not signed:
                continue
            message = f"Привет from Swift, suite {NAMES[suite_id]}, signed={signed}".encode() * 3
            args = ["keys", "seal", "--from", "alice.key", "--to", "bob.key.pub", "--suite", NAMES[suite_id]]
            result = cli(*args + (["--sign"] if signed else []), stdin=message)
            envelope = result.stdout
            if suite_id == 0x03:
                parsed = parse_envelope(envelope)
                check("xwing envelope: 1,120-byte encapsulation", parsed["suite"] == 3 and len(parsed["enc"]) == 1120)
            try:
                opened = open_envelope(envelope, bob, nil, alice_pub)
            except Exception as error:  # noqa: BLE001 - report any failure as a failed check
                opened = repr(error).encode()
            check(f"python opens swift {NAMES[suite_id]} signed={signed}", opened == message, opened[:80])

            reply = f"Ответ from Python, suite {NAMES[suite_id]}".encode()
            sealed = seal_envelope(reply, suite_id, bob, nil, alice_pub, nil, signed)
            result = cli("keys", "open", "--with", "alice.key", "--from", "bob.key.pub", stdin=sealed)
            check(f"swift opens python {NAMES[suite_id]} signed={signed}", result.stdout == reply, result.stderr.decode())

            if suite_id != 0xF0:
                tampered = bytearray(sealed)
                tampered[-1 - (64 if signed else 0)] ^= 1
                result = cli("keys", "open", "--with", "alice.key", "--from", "bob.key.pub", stdin=bytes(tampered))
                expected = b"does not verify" if signed else b"failed authentication"
                check(f"swift rejects tampered python {NAMES[suite_id]} signed={signed}",
                      result.returncode != 0 and expected in result.stderr, result.stderr.decode())

    # Real user ids (the header and the signature bind both; above they are the nil UUID): each
    # side opens the other's only as the recipient user it was sealed to.
    alice_user, bob_user = uuid.uuid4(), uuid.uuid4()
    message = "with user ids, from Swift".encode()
    result = cli("keys", "seal", "--from", "alice.key", "--to", "bob.key.pub", "--sign",
                 "--from-user", str(alice_user), "--to-user", str(bob_user), stdin=message)
    try:
        opened = open_envelope(result.stdout, bob, bob_user.bytes, alice_pub)
    except Exception as error:  # noqa: BLE001
        opened = repr(error).encode() + result.stderr
    check("python opens swift sealed between real user ids", opened == message, opened[:120])
    try:
        open_envelope(result.stdout, bob, alice_user.bytes, alice_pub)
        wrong = b"opened"
    except Exception:  # noqa: BLE001 - any refusal is the expected outcome here
        wrong = b"refused"
    check("python refuses it as another recipient user", wrong == b"refused")
    reply = "with user ids, from Python".encode()
    sealed = seal_envelope(reply, 0x01, bob, bob_user.bytes, alice_pub, alice_user.bytes, True)
    result = cli("keys", "open", "--with", "alice.key", "--from", "bob.key.pub", "--user", str(alice_user), stdin=sealed)
    check("swift opens python sealed between real user ids", result.stdout == reply, result.stderr.decode())
    result = cli("keys", "open", "--with", "alice.key", "--from", "bob.key.pub", "--user", str(bob_user), stdin=sealed)
    check("swift refuses it as another recipient user", result.returncode != 0 and result.stdout == b"",
          result.stderr.decode())

    result = cli("keys", "public", "alice.key", "--format", "seed")
    expected = seed_encode(alice_pub.raw[50:114])
    check("seed key string", result.stdout.decode().strip() == expected, result.stdout.decode())

    result = cli("keys", "fingerprint", "alice.key.pub", "bob.key.pub")
    halves = sorted([safety_half(alice_pub), safety_half(bob_pub)])
    digits = result.stdout.decode().replace(" ", "").strip()
    check("safety number", digits == halves[0] + halves[1], digits)

    result = cli("lab", "encrypt", "--algorithm", "sblock", "--key", "key8", stdin="Привет мир!".encode())
    check("s-block known answer", list(result.stdout) ==
          [255, 121, 158, 69, 160, 140, 234, 92, 92, 101, 140, 8, 20, 46, 207, 185, 250, 74, 239, 179])

    # The seed app's own storage: raw S-block bytes keyed by key strings.
    alice_seed_private = seed_encode(alice.p256.private_numbers().private_value.to_bytes(32, "big"))
    bob_seed_public = seed_encode(bob_pub.raw[50:114])
    message = "Привет из seed-приложения".encode()
    result = cli("keys", "seal", "--suite", "seed-legacy", "--from-private-key", alice_seed_private, "--to-public-key", bob_seed_public, stdin=message)
    expected = sblock(message, seed_key_string(alice.p256, bob_pub.p256).encode())
    check("seed-legacy with key strings is the seed app's raw ciphertext", result.stdout == expected, result.stderr.decode())

    key = os.urandom(32)
    for algorithm in ("aes-gcm", "chacha20-poly1305"):
        result = cli("lab", "encrypt", "--algorithm", algorithm, "--key-hex", key.hex(), stdin=b"raw bytes \x00\xff")
        blob = result.stdout
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
        aead = AESGCM(key) if algorithm == "aes-gcm" else ChaCha20Poly1305(key)
        try:
            plain = aead.decrypt(blob[:12], blob[12:], None)
        except Exception as error:  # noqa: BLE001
            plain = repr(error).encode()
        check(f"cipher encrypt {algorithm}: nonce ‖ ciphertext ‖ tag", plain == b"raw bytes \x00\xff", plain)

    shutil.rmtree(work, ignore_errors=True)
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
