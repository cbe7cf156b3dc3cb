#!/usr/bin/env python3
"""The `data` field of an identity-signed request, in Python (standard library only).

`data` is the hex SHA-256 of the body, without the four credential fields, serialized exactly as JavaScript's
JSON.stringify writes it (docs/api.md, "The body hash"). Python's json.dumps differs (spaces, `1.0`, `\\u00e9`
escapes, `1e+16` forms), so this file carries its own serializer. Serialize the body with `js_json` and send
those bytes: the relay hashes the body as it parses it, so what you hash and what you send must agree.

Usage: one JSON body per line on stdin, one `data` per line on stdout.
    echo '{"wkIdentity":"bc1q...","action":"tx","payload":"00"}' | python3 sign_body.py
"""

import hashlib
import json
import math
import sys

CREDENTIAL_FIELDS = ("signature", "message", "publicKey", "witnessScript")

ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def js_string(text):
    """A JSON string as JSON.stringify writes it: only `"`, `\\` and U+0000-U+001F escaped; lone surrogates as
    lowercase \\udxxx; everything else (`/`, non-ASCII) as is."""
    out = ['"']
    i = 0
    while i < len(text):
        ch = text[i]
        code = ord(ch)
        if ch in ESCAPES:
            out.append(ESCAPES[ch])
        elif code < 0x20:
            out.append("\\u%04x" % code)
        elif 0xD800 <= code <= 0xDBFF and i + 1 < len(text) and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            # A high and a low surrogate held apart are one character in JavaScript's UTF-16.
            out.append(chr(0x10000 + ((code - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)))
            i += 1
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(ch)
        i += 1
    out.append('"')
    return "".join(out)


def js_number(value):
    """A number as JavaScript writes it (Number::toString): the shortest digits that round-trip, integers without
    `.0`, exponent form from 1e21 up and below 1e-6 (`1e+21`, `1.5e-7`), `-0` as `0`, non-finite as `null`."""
    try:
        number = float(value)  # JavaScript numbers are doubles: an integer is read as one too.
    except OverflowError:
        return "null"
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr gives the shortest round-trip digits; take them apart into digits and the decimal point's place.
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    leading_zeros = len(all_digits) - len(all_digits.lstrip("0"))
    digits = all_digits.strip("0")
    k = len(digits)
    n = len(whole) + int(exponent or 0) - leading_zeros  # value = 0.<digits> x 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        head = digits if k == 1 else digits[0] + "." + digits[1:]
        text = head + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def js_json(value):
    """JSON.stringify(value): no whitespace, object keys in their order."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(js_string(key) + ":" + js_json(item) for key, item in value.items()) + "}"
    raise TypeError("not a JSON value: %r" % (value,))


def body_data(body):
    """The message's `data`: hex SHA-256 of the body without the four fields, keys in their order."""
    rest = {key: item for key, item in body.items() if key not in CREDENTIAL_FIELDS}
    return hashlib.sha256(js_json(rest).encode("utf-8")).hexdigest()


if __name__ == "__main__":
    for line in sys.stdin:
        if line.strip():
            print(body_data(json.loads(line)))
