#!/usr/bin/env python3
"""docs/PROTOCOL.md §6 (the vault and its backups) implemented independently in Python
(`cryptography`): it reads a backup the `confidant` CLI made — the manifest, the wrapped key, the
catalogue, the sealed texts and the media objects — and writes one of its own from scratch, which
the CLI restores and exports byte for byte.

usage: vault_interop.py PATH/TO/confidant
Prints one line per check and a closing 'vault_interop: N passed, N failed'; exits 1 on a failure.
"""
import base64, hashlib, hmac, json, os, shutil, struct, subprocess, sys, tempfile, time, uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SEGMENT = 65536


# ---- §6 keys -------------------------------------------------------------------------------
def subkey(vault_key: bytes, purpose: str, salt: bytes = b"") -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt or None,
                info=f"Confidant vault {purpose} v1".encode()).derive(vault_key)


def unwrap(wrapped: bytes, passphrase: str) -> bytes:
    assert wrapped[:4] == b"CFVK" and wrapped[4] == 1 and len(wrapped) == 90, "wrapped key format"
    log2n, (r, p) = wrapped[5], struct.unpack(">II", wrapped[6:14])
    assert 10 <= log2n <= 20 and 1 <= r <= 8 and 1 <= p <= 4, "scrypt parameters out of bounds"
    key = hashlib.scrypt(passphrase.encode(), salt=wrapped[14:30], n=1 << log2n, r=r, p=p,
                         maxmem=(1 << 31) - 1, dklen=32)
    return AESGCM(key).decrypt(wrapped[30:42], wrapped[42:], wrapped[:42])


def wrap(vault_key: bytes, passphrase: str, log2n: int = 10) -> bytes:
    header = b"CFVK" + bytes([1, log2n]) + struct.pack(">II", 8, 1) + os.urandom(16) + os.urandom(12)
    key = hashlib.scrypt(passphrase.encode(), salt=header[14:30], n=1 << log2n, r=8, p=1, maxmem=256 << 20, dklen=32)
    return header + AESGCM(key).encrypt(header[30:42], vault_key, header)


# ---- §6 sealed text ------------------------------------------------------------------------
def text_aad(row_id: str, field: str) -> bytes:
    return b"Confidant vault text v1\0" + uuid.UUID(row_id).bytes + field.encode()


def open_text(vault_key: bytes, sealed: bytes, row_id: str, field: str) -> str:
    return AESGCM(subkey(vault_key, "text")).decrypt(sealed[:12], sealed[12:], text_aad(row_id, field)).decode()


def seal_text(vault_key: bytes, text: str, row_id: str, field: str) -> bytes:
    nonce = os.urandom(12)
    return nonce + AESGCM(subkey(vault_key, "text")).encrypt(nonce, text.encode(), text_aad(row_id, field))


# ---- §6 media objects ----------------------------------------------------------------------
def media_key(vault_key: bytes, header: bytes, media_id: str) -> bytes:
    return subkey(vault_key, "media", header[9:25] + uuid.UUID(media_id).bytes)


def decrypt_media(vault_key: bytes, data: bytes, media_id: str) -> bytes:
    header, body = data[:25], data[25:]
    assert header[:4] == b"CFVM" and header[4] == 1 and struct.unpack(">I", header[5:9])[0] == SEGMENT
    aead = AESGCM(media_key(vault_key, header, media_id))
    sealed = SEGMENT + 16
    count = max(1, -(-len(body) // sealed))
    out = b""
    for index in range(count):
        last = index == count - 1
        segment = body[index * sealed:(index + 1) * sealed]
        plain = aead.decrypt(bytes(3) + struct.pack(">Q", index) + bytes([1 if last else 0]), segment, header)
        assert not (last and index > 0 and not plain), "empty final segment after full ones"
        out += plain
    return out


def encrypt_media(vault_key: bytes, plain: bytes, media_id: str):
    header = b"CFVM" + bytes([1]) + struct.pack(">I", SEGMENT) + os.urandom(16)
    aead = AESGCM(media_key(vault_key, header, media_id))
    chunks = [plain[i:i + SEGMENT] for i in range(0, len(plain), SEGMENT)] or [b""]
    out, tags = header, []
    for index, chunk in enumerate(chunks):
        nonce = bytes(3) + struct.pack(">Q", index) + bytes([1 if index == len(chunks) - 1 else 0])
        sealed = aead.encrypt(nonce, chunk, header)
        out += sealed
        tags.append(sealed[-16:])
    address = hashlib.sha256(b"Confidant vault object v1\0" + header + b"".join(tags)).hexdigest()
    return out, address


# ---- §6 backups ----------------------------------------------------------------------------
def read_backup(root: str, passphrase: str):
    names = os.listdir(os.path.join(root, "manifests"))
    assert len(names) == 1, names
    outer = json.load(open(os.path.join(root, "manifests", names[0])))
    assert outer["version"] == 2, "manifest version 2"
    body = base64.b64decode(outer["manifest"])
    manifest = json.loads(body)
    vault_key = unwrap(base64.b64decode(manifest["wrappedKey"]), passphrase)
    mac = hmac.new(subkey(vault_key, "backup manifest"), b"Confidant backup manifest v2\0" + body, hashlib.sha256)
    assert hmac.compare_digest(mac.digest(), base64.b64decode(outer["mac"])), "manifest MAC"
    backup_id = hmac.new(subkey(vault_key, "backup id"), b"backup id", hashlib.sha256).digest()[:16].hex()
    assert manifest["backupID"] == backup_id == names[0], "backup id"
    sealed = open(os.path.join(root, "catalogs", manifest["catalogHash"]), "rb").read()
    assert hashlib.sha256(sealed).hexdigest() == manifest["catalogHash"]
    catalog = json.loads(AESGCM(subkey(vault_key, "backup catalog")).decrypt(
        sealed[:12], sealed[12:], b"Confidant backup catalogue v2\0" + backup_id.encode()))
    return vault_key, manifest, catalog


def write_backup(root: str, passphrase: str, chapter: str, text: str, files: dict) -> None:
    vault_key = os.urandom(32)
    now = int(time.time() * 1000)
    chapter_id, item_id = str(uuid.uuid4()), str(uuid.uuid4())
    media, hashes = [], []
    os.makedirs(os.path.join(root, "objects"), mode=0o700)
    for position, (name, data) in enumerate(files.items()):
        media_id = str(uuid.uuid4())
        sealed, address = encrypt_media(vault_key, data, media_id)
        with open(os.path.join(root, "objects", address), "wb") as f:
            f.write(sealed)
        hashes.append(address)
        media.append({"id": media_id, "itemId": item_id, "position": position,
                      "nameSealed": base64.b64encode(seal_text(vault_key, name, media_id, "media.name")).decode(),
                      "contentTypeSealed": base64.b64encode(seal_text(vault_key, "application/octet-stream",
                                                                      media_id, "media.contentType")).decode(),
                      "size": len(data), "objectHash": address})
    catalog = json.dumps({
        "chapters": [{"id": chapter_id, "createdAt": now,
                      "titleSealed": base64.b64encode(seal_text(vault_key, chapter, chapter_id, "chapter.title")).decode()}],
        "items": [{"id": item_id, "chapterId": chapter_id, "timestamp": now, "kind": "media",
                   "textSealed": base64.b64encode(seal_text(vault_key, text, item_id, "item.text")).decode()}],
        "media": media,
    }).encode()
    backup_id = hmac.new(subkey(vault_key, "backup id"), b"backup id", hashlib.sha256).digest()[:16].hex()
    nonce = hmac.new(subkey(vault_key, "backup catalog nonce"), catalog, hashlib.sha256).digest()[:12]
    sealed = nonce + AESGCM(subkey(vault_key, "backup catalog")).encrypt(
        nonce, catalog, b"Confidant backup catalogue v2\0" + backup_id.encode())
    catalog_hash = hashlib.sha256(sealed).hexdigest()
    os.makedirs(os.path.join(root, "catalogs"), mode=0o700)
    with open(os.path.join(root, "catalogs", catalog_hash), "wb") as f:
        f.write(sealed)
    # Python's json writes "/" as is and its own key order: the MAC covers the body as stored.
    body = json.dumps({"createdAt": now, "wrappedKey": base64.b64encode(wrap(vault_key, passphrase)).decode(),
                       "catalogHash": catalog_hash, "objectHashes": hashes, "backupID": backup_id}).encode()
    mac = hmac.new(subkey(vault_key, "backup manifest"), b"Confidant backup manifest v2\0" + body, hashlib.sha256)
    os.makedirs(os.path.join(root, "manifests"), mode=0o700)
    with open(os.path.join(root, "manifests", backup_id), "w") as f:
        json.dump({"mac": base64.b64encode(mac.digest()).decode(), "version": 2,
                   "manifest": base64.b64encode(body).decode()}, f)


def main() -> int:
    binary = os.path.abspath(sys.argv[1])
    passed = failed = 0
    work = tempfile.mkdtemp(prefix="confidant-vault-interop-")
    passphrase = "vault interop passphrase"

    def cli(home, *args):
        env = dict(os.environ, CONFIDANT_PASSPHRASE=passphrase, CONFIDANT_HOME=os.path.join(work, home))
        return subprocess.run([binary, *args], capture_output=True, env=env, cwd=work)

    def check(name, condition, detail=""):
        nonlocal passed, failed
        passed, failed = (passed + 1, failed) if condition else (passed, failed + 1)
        print(f"{'ok   ' if condition else 'FAIL '} {name} {'' if condition else detail}")

    # The CLI makes a vault and backs it up; Python reads every part of the backup.
    photo = os.urandom(3 * SEGMENT + 17)        # several segments and a short last one
    exact = os.urandom(2 * SEGMENT)             # whole segments: the last is full and flagged
    for name, data in (("photo.jpg", photo), ("exact.bin", exact), ("empty.txt", b"")):
        open(os.path.join(work, name), "wb").write(data)
    steps = [("vault", "init", "--scrypt-log2n", "10"), ("vault", "chapter", "add", "Sommer / 夏"),
             ("vault", "add", "--chapter", "Sommer / 夏", "--text", "Am See, mit Ärger/ohne",
              "--file", "photo.jpg", "--file", "exact.bin", "--file", "empty.txt"),
             ("vault", "backup", "--to", os.path.join(work, "swift-backup"))]
    for step in steps:
        result = cli("swift-home", *step)
        check(" ".join(step[:2]), result.returncode == 0, result.stderr.decode())
    try:
        vault_key, manifest, catalog = read_backup(os.path.join(work, "swift-backup"), passphrase)
        check("python reads the CLI's manifest v2, key, catalogue and backup id", True)
        chapter = catalog["chapters"][0]
        check("chapter title", open_text(vault_key, base64.b64decode(chapter["titleSealed"]), chapter["id"],
                                         "chapter.title") == "Sommer / 夏")
        item = catalog["items"][0]
        check("item text", open_text(vault_key, base64.b64decode(item["textSealed"]), item["id"],
                                     "item.text") == "Am See, mit Ärger/ohne")
        originals = {"photo.jpg": photo, "exact.bin": exact, "empty.txt": b""}
        for row in sorted(catalog["media"], key=lambda row: row["position"]):
            name = open_text(vault_key, base64.b64decode(row["nameSealed"]), row["id"], "media.name")
            data = open(os.path.join(work, "swift-backup", "objects", row["objectHash"]), "rb").read()
            body = data[25:]
            segments = [body[i:i + SEGMENT + 16] for i in range(0, len(body), SEGMENT + 16)]
            header_and_tags = data[:25] + b"".join(segment[-16:] for segment in segments)
            plain = decrypt_media(vault_key, data, row["id"])
            check(f"media {name}: decrypts to the file, its address is header + tags",
                  plain == originals[name] and row["size"] == len(plain) and
                  hashlib.sha256(b"Confidant vault object v1\0" + header_and_tags).hexdigest() == row["objectHash"])
        check("the manifest lists every object", sorted(manifest["objectHashes"]) ==
              sorted(row["objectHash"] for row in catalog["media"]))
    except Exception as error:  # noqa: BLE001 - a failure to read is a failed check
        check("python reads the CLI's backup", False, repr(error))

    # Python writes a backup from scratch; the CLI restores and exports it byte for byte.
    mine = {"notes.txt": "Grüße / hello\n".encode() * 1000, "round.bin": os.urandom(SEGMENT), "none.bin": b""}
    try:
        write_backup(os.path.join(work, "python-backup"), passphrase, "Python / chapter", "written by Python", mine)
        check("python writes a backup", True)
    except Exception as error:  # noqa: BLE001
        check("python writes a backup", False, repr(error))
    result = cli("restore-home", "vault", "restore", "--from", os.path.join(work, "python-backup"))
    check("the CLI restores Python's backup", result.returncode == 0, result.stderr.decode())
    listed = cli("restore-home", "vault", "list", "--json")
    try:
        rows = json.loads(listed.stdout)
        check("with its chapter and text", rows[0]["chapter"] == "Python / chapter" and rows[0]["text"] == "written by Python",
              listed.stdout[:300])
        exported = cli("restore-home", "vault", "export", "--all", os.path.join(work, "exported"))
        check("export", exported.returncode == 0, exported.stderr.decode())
        found = {}
        for directory, _, names in os.walk(os.path.join(work, "exported")):
            for name in names:
                found[name] = open(os.path.join(directory, name), "rb").read()
        for name, data in mine.items():
            check(f"exported {name} equals what Python encrypted", found.get(name) == data)
        verified = cli("restore-home", "vault", "verify")
        check("vault verify finds nothing wrong", verified.returncode == 0, verified.stdout.decode() + verified.stderr.decode())
    except Exception as error:  # noqa: BLE001
        check("the restored vault lists and exports", False, repr(error) + listed.stderr.decode())

    # Tampering Python can do to the CLI's backup is caught by the CLI.
    root = os.path.join(work, "swift-backup")
    name = os.listdir(os.path.join(root, "manifests"))[0]
    outer = json.load(open(os.path.join(root, "manifests", name)))
    body = json.loads(base64.b64decode(outer["manifest"]))
    body["objectHashes"] = body["objectHashes"][:-1]
    outer["manifest"] = base64.b64encode(json.dumps(body).encode()).decode()
    json.dump(outer, open(os.path.join(root, "manifests", name), "w"))
    result = cli("tamper-home", "vault", "restore", "--from", root)
    check("the CLI refuses a manifest whose body was changed", result.returncode != 0 and b"altered" in result.stderr,
          result.stderr.decode())

    shutil.rmtree(work, ignore_errors=True)
    print(f"vault_interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
