#!/usr/bin/env python3
"""Checks Confidant's QR encoder (ConfidantKit QRCode) against the `qrcode` package, module for
module: for each code in the JSON file the Swift test wrote, the same bytes are encoded here in
byte mode at the same version, error correction and mask, and the two matrices must be equal.

    qr_check.py CODES.json      (a list of {text, version, mask, correction, modules: [rows of 0/1]})
"""
import json, sys

import qrcode
from qrcode.util import QRData, MODE_8BIT_BYTE

LEVELS = {"low": qrcode.constants.ERROR_CORRECT_L, "medium": qrcode.constants.ERROR_CORRECT_M,
          "quartile": qrcode.constants.ERROR_CORRECT_Q, "high": qrcode.constants.ERROR_CORRECT_H}

failed = 0
codes = json.load(open(sys.argv[1]))
for code in codes:
    qr = qrcode.QRCode(version=code["version"], error_correction=LEVELS[code["correction"]],
                       mask_pattern=code["mask"], border=0)
    qr.add_data(QRData(code["text"].encode("utf-8"), mode=MODE_8BIT_BYTE), optimize=0)
    qr.make(fit=False)
    theirs = ["".join("1" if m else "0" for m in row) for row in qr.modules]
    if theirs != code["modules"]:
        failed += 1
        differing = sum(a != b for r1, r2 in zip(theirs, code["modules"]) for a, b in zip(r1, r2))
        print(f"MISMATCH version {code['version']} mask {code['mask']} {code['correction']}: "
              f"{differing} modules differ for {code['text'][:40]!r}")
print(f"qr_check: {len(codes) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
