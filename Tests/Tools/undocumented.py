#!/usr/bin/env python3
"""Lists public declarations of the libraries that have no doc comment (`///` or `/** */`).

    Tests/Tools/undocumented.py [MODULE…]   (default: ConfidantCrypto ConfidantKit ConfidantVault)

Exits 1 when any is found. Conformance witnesses whose meaning the protocol gives (`description`,
`id`, `hash(into:)`, `==`, `init(from:)`…) and enum cases are not counted.
"""
import pathlib, re, sys

WITNESSES = {"description", "errorDescription", "id", "hash", "==", "!=", "init(from", "encode(to", "init(argument",
             "makeIterator", "next", "rawValue", "init(rawValue", "localizedDescription", "debugDescription"}
DECL = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:nonisolated\s+)?public\s+(?:private\(set\)\s+|nonisolated\s+|static\s+|final\s+|mutating\s+|override\s+|convenience\s+|required\s+)*"
                  r"(func|var|let|init\??|struct|enum|class|actor|protocol|typealias|subscript)\b\s*([^\s(:<={]*)")

def undocumented(module):
    found = []
    for path in sorted(pathlib.Path("Sources", module).rglob("*.swift")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            match = DECL.match(line)
            if not match:
                continue
            kind, name = match.groups()
            key = name if kind != "init" else "init(" + line.split("init(", 1)[-1].split(":", 1)[0]
            if name in WITNESSES or key in WITNESSES or (kind.startswith("init") and "init(from" in line):
                continue
            previous = number - 1
            while previous >= 0 and (lines[previous].strip().startswith("@") or lines[previous].strip().startswith("// swift-format")):
                previous -= 1
            above = lines[previous].strip() if previous >= 0 else ""
            if not (above.startswith("///") or above.endswith("*/")):
                found.append(f"{path}:{number + 1}: {kind} {name}")
    return found

modules = sys.argv[1:] or ["ConfidantCrypto", "ConfidantKit", "ConfidantVault"]
missing = [entry for module in modules for entry in undocumented(module)]
print("\n".join(missing))
print(f"{len(missing)} public declarations without a doc comment in {', '.join(modules)}", file=sys.stderr)
sys.exit(1 if missing else 0)
