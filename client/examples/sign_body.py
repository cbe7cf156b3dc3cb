#!/usr/bin/env python3
"""Identity-signed requests in Python: the reference for an app not written in JavaScript.

A signed `POST /v1/action`, `/v1/token` or `/v1/sync` (and a socket `join`) is the body followed by four fields
(docs/api.md, "Identity-signed requests"):

    signature      base64 of 65 bytes: header 31 + recovery id (compressed key), then r || s, a BIP-137
                   "Bitcoin Signed Message" signature of `message`, deterministic (RFC 6979), low-S
    message        {"timestamp":<epoch ms>,"action":"<purpose>","identity":"<wkIdentity>","nonce":"<64 hex>",
                   "data":"<64 hex>"} where data = hex SHA-256 of the body without the four fields
    publicKey      the signing key, compressed (66 hex)
    witnessScript  the pair's 2-of-2 script 52 21 <key A> 21 <key B> 52 ae, the two keys sorted

The signed digest is SHA-256(SHA-256("\\x18Bitcoin Signed Message:\\n" || varint(len) || message bytes)). The
message is about 270 bytes (at most 1,024), so its length ALWAYS takes the 3-byte varint form: 0xfd, then the
length as 2 bytes little-endian (a 1-byte length, right only below 253 bytes, gives a signature the relay
refuses). `varint` below writes every form.

`data` hashes the body as JavaScript's JSON.stringify writes it (docs/api.md, "The body hash"). Python's
json.dumps differs (spaces, `1.0`, `\\u00e9` escapes, `1e+16` forms), so this file carries its own serializer.
Serialize the body with `js_json` and send those bytes: the relay hashes the body as it parses it, so what you
hash and what you send must agree.

The body hash needs only the standard library. Signing uses python-ecdsa 0.18 or later (Debian and Ubuntu:
`apt-get install python3-ecdsa`; elsewhere `pip install ecdsa`). python-ecdsa is pure Python and not
constant-time: a reference and a test tool. An app holding a real identity key signs with a libsecp256k1 binding
(such as coincurve: `PrivateKey.sign_recoverable(digest, hasher=None)` gives r || s || recovery id) over the same
digest, and checks its output against this file's for one key and message (`sign --timestamp --nonce`).

Usage:
    python3 sign_body.py [--relay URL]    a demo: a new pair, its wallet signs a `tx` for it (POSTed to URL)
    python3 sign_body.py keygen [--testnet]
        a new identity key: {"privateKey", "wif", "publicKey", "address"} (address: its P2PKH)
    python3 sign_body.py pair PUBLIC_KEY PUBLIC_KEY [--testnet]
        the pair of two public keys: {"witnessScript", "wkIdentity"}
    python3 sign_body.py sign --key KEY --other-public-key PUBLIC_KEY --purpose PURPOSE
                              [--timestamp MS] [--nonce HEX] [--fields] < body.json
        the request to POST: the body from stdin (its keys in their order) then the four fields, signed with KEY
        (64 hex or WIF) for PURPOSE (action, token, sync, join, session); --fields prints the four fields alone.
        Without --other-public-key the body names KEY's own address in walletIdentity, and three fields follow
        it (no witnessScript): a wallet session's exchange
    python3 sign_body.py session --relay URL --key KEY [--other-public-key PUBLIC_KEY --side SIDE] [--testnet]
        a session (docs/api.md, "Sessions"): asks the relay for a challenge, signs it (purpose session) with KEY
        and exchanges it; prints the answer {"token", "tokenType", "expiresAt", "expiresIn", ...}. With the pair's
        other key and a side (key or wallet): a token for the pair; without: for KEY's walletIdentity
    python3 sign_body.py data < bodies.jsonl
        one JSON body per line on stdin, one `data` per line on stdout
"""

import argparse
import base64
import hashlib
import json
import math
import secrets
import sys
import time
import urllib.error
import urllib.request

try:
    import ecdsa
    from ecdsa.util import sigencode_string_canonize
except ImportError:  # the body hash needs only the standard library
    ecdsa = None

CREDENTIAL_FIELDS = ("signature", "message", "publicKey", "witnessScript")
PURPOSES = ("action", "token", "sync", "join", "session")

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


def varint(length):
    """Bitcoin's CompactSize: 1 byte below 0xfd; 0xfd + 2 bytes, 0xfe + 4 bytes, 0xff + 8 bytes, little-endian.
    A signed message (about 270 bytes, at most 1,024) always takes the 0xfd form."""
    if length < 0xFD:
        return bytes([length])
    if length <= 0xFFFF:
        return b"\xfd" + length.to_bytes(2, "little")
    if length <= 0xFFFFFFFF:
        return b"\xfe" + length.to_bytes(4, "little")
    return b"\xff" + length.to_bytes(8, "little")


MESSAGE_MAGIC = b"\x18Bitcoin Signed Message:\n"


def signed_message_digest(message):
    """BIP-137: SHA-256(SHA-256(magic || varint(byte length) || UTF-8 bytes of the message))."""
    data = message.encode("utf-8")
    framed = MESSAGE_MAGIC + varint(len(data)) + data
    return hashlib.sha256(hashlib.sha256(framed).digest()).digest()


BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58check_encode(payload):
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(raw, "big")
    text = ""
    while number:
        number, digit = divmod(number, 58)
        text = BASE58[digit] + text
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + text


def base58check_decode(text):
    number = 0
    for char in text:
        if char not in BASE58:
            raise ValueError("not base58: %r" % char)
        number = number * 58 + BASE58.index(char)
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(text) - len(text.lstrip("1"))) + body
    payload, checksum = raw[:-4], raw[-4:]
    if len(raw) < 5 or hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != checksum:
        raise ValueError("bad base58check checksum")
    return payload


# Version bytes, keyed by "is it testnet".
WIF_PREFIX = {False: 0x80, True: 0xEF}
P2PKH_PREFIX = {False: 0x00, True: 0x6F}


def private_key_of(text):
    """32 bytes from 64 hex characters or a WIF (mainnet `K`/`L`/`5`, testnet `c`/`9`)."""
    text = text.strip()
    if len(text) == 64:
        return bytes.fromhex(text)
    payload = base58check_decode(text)
    # A WIF is prefix || key, then 0x01 when its public key is compressed (the identity keys always are).
    if payload[0] not in WIF_PREFIX.values() or len(payload) not in (33, 34) or payload[33:] not in (b"", b"\x01"):
        raise ValueError("not a WIF private key")
    return payload[1:33]


def wif_of(private_key, testnet=False):
    return base58check_encode(bytes([WIF_PREFIX[testnet]]) + private_key + b"\x01")


def _curve():
    if ecdsa is None:
        sys.exit("signing needs python-ecdsa 0.18 or later: apt-get install python3-ecdsa (or pip install ecdsa)")
    return ecdsa.SECP256k1


def public_key_of(private_key):
    """The compressed public key (33 bytes, 02/03 || x)."""
    curve = _curve()
    signing_key = ecdsa.SigningKey.from_string(private_key, curve=curve)
    return signing_key.get_verifying_key().to_string("compressed")


def p2pkh_address(public_key, testnet=False):
    """The key's P2PKH address (`1...`, testnet `m...`/`n...`): a sync's walletIdentity is the wallet key's.
    RIPEMD-160 comes from hashlib's OpenSSL, which a few builds leave out (hashlib then raises ValueError)."""
    key_hash = hashlib.new("ripemd160", hashlib.sha256(public_key).digest()).digest()
    return base58check_encode(bytes([P2PKH_PREFIX[testnet]]) + key_hash)


def sign_message(message, private_key):
    """BIP-137 signature of `message` for a compressed key, base64 of 65 bytes: header 31 + recovery id, r || s.
    Deterministic (RFC 6979) and low-S, so it equals what the apps' libraries give for the same key and message."""
    curve = _curve()
    digest = signed_message_digest(message)
    signing_key = ecdsa.SigningKey.from_string(private_key, curve=curve)
    rs = signing_key.sign_digest_deterministic(
        digest, hashfunc=hashlib.sha256, sigencode=sigencode_string_canonize
    )
    # python-ecdsa recovers the key of an even R.y first (recovery id 0), then of an odd one (1); ids 2 and 3
    # (R.x beyond the group order) occur with probability about 2^-128 and are not produced here.
    candidates = ecdsa.VerifyingKey.from_public_key_recovery_with_digest(rs, digest, curve, hashfunc=hashlib.sha256)
    compressed = [candidate.to_string("compressed") for candidate in candidates]
    recovery_id = compressed.index(public_key_of(private_key))
    return base64.b64encode(bytes([31 + recovery_id]) + rs).decode("ascii")


def witness_script_of(public_key_a, public_key_b):
    """The pair's 2-of-2 script `52 21 <A> 21 <B> 52 ae` (hex), the two compressed keys in sorted order (BIP-67)."""
    first, second = sorted(key.hex() for key in (public_key_a, public_key_b))
    return "5221" + first + "21" + second + "52ae"


BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values):
    generator = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for i in range(5):
            checksum ^= generator[i] if (top >> i) & 1 else 0
    return checksum


def wk_identity_of(witness_script, testnet=False):
    """The pair's wkIdentity: the P2WSH address (bech32, witness version 0, `bc`/`tb`) of SHA-256(script)."""
    hrp = "tb" if testnet else "bc"
    program = hashlib.sha256(bytes.fromhex(witness_script)).digest()
    bits = "".join(format(byte, "08b") for byte in program)
    words = [0] + [int(bits[i : i + 5].ljust(5, "0"), 2) for i in range(0, len(bits), 5)]
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    polymod = _bech32_polymod(expanded + words + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[word] for word in words + checksum)


def signed_fields(identity, body, purpose, private_key, timestamp=None, nonce=None):
    """signature, message and publicKey: `message` binds `purpose`, `identity`, a nonce and the body's hash. A
    session's nonce is its challenge, the default for purpose `session`."""
    if purpose not in PURPOSES:
        raise ValueError("purpose is one of %s" % ", ".join(PURPOSES))
    if nonce is None and purpose == "session":
        nonce = body.get("challenge")
    message = js_json(
        {
            "timestamp": time.time_ns() // 1_000_000 if timestamp is None else timestamp,
            "action": purpose,
            "identity": identity,
            "nonce": secrets.token_hex(32) if nonce is None else nonce,
            "data": body_data(body),
        }
    )
    return {
        "signature": sign_message(message, private_key),
        "message": message,
        "publicKey": public_key_of(private_key).hex(),
    }


def sign_body(body, purpose, private_key, other_public_key, timestamp=None, nonce=None):
    """The four fields for `body` (which names its pair in wkIdentity), signed for `purpose` by `private_key`."""
    if not isinstance(body.get("wkIdentity"), str):
        raise ValueError("a signed body names its pair in wkIdentity")
    fields = signed_fields(body["wkIdentity"], body, purpose, private_key, timestamp, nonce)
    fields["witnessScript"] = witness_script_of(public_key_of(private_key), other_public_key)
    return fields


def sign_wallet_body(body, purpose, private_key, timestamp=None, nonce=None):
    """The three fields for `body` (which names the key's own P2PKH address in walletIdentity, mainnet or
    testnet), signed for `purpose` by the wallet identity key: a wallet session's exchange has no script."""
    public_key = public_key_of(private_key)
    if body.get("walletIdentity") not in (p2pkh_address(public_key), p2pkh_address(public_key, testnet=True)):
        raise ValueError("a wallet-signed body names the key's own address in walletIdentity")
    return signed_fields(body["walletIdentity"], body, purpose, private_key, timestamp, nonce)


def post_json(relay, path, request, token=None):
    """POSTs the bytes `request` to the relay; (status, parsed answer), a refusal's envelope included."""
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = "Bearer " + token
    post = urllib.request.Request(relay.rstrip("/") + path, data=request, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(post) as answer:
            return answer.status, json.loads(answer.read().decode("utf-8"))
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read().decode("utf-8"))


def open_session(relay, private_key, other_public_key=None, side=None, testnet=False):
    """A session token (docs/api.md, "Sessions"): a challenge for the pair and side (or, without the other key,
    for the key's walletIdentity), signed with purpose `session` and the challenge as the nonce, then exchanged.
    Answers (status, parsed answer) of the exchange, or of the challenge when the relay refused it."""
    public_key = public_key_of(private_key)
    if other_public_key is None:
        subject = {"walletIdentity": p2pkh_address(public_key, testnet)}
    else:
        subject = {"wkIdentity": wk_identity_of(witness_script_of(public_key, other_public_key), testnet), "side": side}
    status, asked = post_json(relay, "/v1/session/challenge", js_json(subject).encode("utf-8"))
    if status != 200:
        return status, asked
    body = {**subject, "challenge": asked["data"]["challenge"]}
    if other_public_key is None:
        credential = sign_wallet_body(body, "session", private_key)
    else:
        credential = sign_body(body, "session", private_key, other_public_key)
    return post_json(relay, "/v1/session", signed_request(body, credential))


def signed_request(body, credential):
    """The bytes to POST: the body, its keys in their order, then the four fields."""
    return js_json({**body, **credential}).encode("utf-8")


def demo(relay):
    """A new pair; its wallet signs a `tx` request to its key app; printed, and POSTed when `relay` is given."""
    wallet_private, key_private = secrets.token_bytes(32), secrets.token_bytes(32)
    wallet_public, key_public = public_key_of(wallet_private), public_key_of(key_private)
    wk_identity = wk_identity_of(witness_script_of(wallet_public, key_public))
    body = {"chain": "btc", "wkIdentity": wk_identity, "action": "tx", "payload": "deadbeef", "path": "0-0"}
    credential = sign_body(body, "action", wallet_private, key_public)
    print("wallet identity key: %s (WIF %s)" % (wallet_private.hex(), wif_of(wallet_private)))
    print("key app public key:  %s" % key_public.hex())
    print("wkIdentity:          %s" % wk_identity)
    print("walletIdentity:      %s" % p2pkh_address(wallet_public))
    length = len(credential["message"].encode("utf-8"))
    print("message bytes:       %d (varint %s)" % (length, varint(length).hex()))
    for field in CREDENTIAL_FIELDS:
        print("%-20s %s" % (field + ":", credential[field]))
    request = signed_request(body, credential)
    if relay is None:
        print("POST /v1/action:     %s" % request.decode("utf-8"))
        return 0
    status, answer = post_json(relay, "/v1/action", request)
    print("POST /v1/action:     %d %s" % (status, js_json(answer)))
    return 0 if status == 200 else 1


def main(argv):
    parser = argparse.ArgumentParser(description="Identity-signed requests for the multisig relay.")
    parser.add_argument("--relay", help="the demo POSTs its signed request to this base URL")
    commands = parser.add_subparsers(dest="command")
    keygen = commands.add_parser("keygen", help="a new identity key")
    keygen.add_argument("--testnet", action="store_true")
    pair = commands.add_parser("pair", help="the pair of two public keys")
    pair.add_argument("public_keys", nargs=2, metavar="PUBLIC_KEY")
    pair.add_argument("--testnet", action="store_true")
    sign = commands.add_parser("sign", help="the request to POST for the JSON body on stdin")
    sign.add_argument("--key", required=True, help="the signer's private key: 64 hex or WIF")
    sign.add_argument("--other-public-key", help="the pair's other public key (66 hex); none: a wallet body")
    sign.add_argument("--purpose", required=True, choices=PURPOSES)
    sign.add_argument("--timestamp", type=int, help="epoch milliseconds (default: now)")
    sign.add_argument("--nonce", help="64 hex (default: random)")
    sign.add_argument("--fields", action="store_true", help="print the four fields alone")
    session = commands.add_parser("session", help="a session token: challenge, signature, exchange")
    session.add_argument("--relay", required=True, help="the relay's base URL")
    session.add_argument("--key", required=True, help="the signer's private key: 64 hex or WIF")
    session.add_argument("--other-public-key", help="the pair's other public key (66 hex); none: a wallet session")
    session.add_argument("--side", choices=("key", "wallet"), help="the side of the pair the token is for")
    session.add_argument("--testnet", action="store_true")
    commands.add_parser("data", help="`data` of each JSON body on stdin, one per line")
    args = parser.parse_args(argv)

    if args.command is None:
        return demo(args.relay)
    if args.command == "keygen":
        private_key = secrets.token_bytes(32)
        public_key = public_key_of(private_key)
        print(
            js_json(
                {
                    "privateKey": private_key.hex(),
                    "wif": wif_of(private_key, args.testnet),
                    "publicKey": public_key.hex(),
                    "address": p2pkh_address(public_key, args.testnet),
                }
            )
        )
    elif args.command == "pair":
        script = witness_script_of(*(bytes.fromhex(key) for key in args.public_keys))
        print(js_json({"witnessScript": script, "wkIdentity": wk_identity_of(script, args.testnet)}))
    elif args.command == "sign":
        body = json.loads(sys.stdin.read())
        private_key = private_key_of(args.key)
        if args.other_public_key is None:
            credential = sign_wallet_body(body, args.purpose, private_key, args.timestamp, args.nonce)
        else:
            other_public_key = bytes.fromhex(args.other_public_key)
            credential = sign_body(body, args.purpose, private_key, other_public_key, args.timestamp, args.nonce)
        print(js_json(credential) if args.fields else signed_request(body, credential).decode("utf-8"))
    elif args.command == "session":
        if (args.other_public_key is None) != (args.side is None):
            parser.error("session: --other-public-key and --side go together (neither: a wallet session)")
        other_public_key = None if args.other_public_key is None else bytes.fromhex(args.other_public_key)
        status, answer = open_session(args.relay, private_key_of(args.key), other_public_key, args.side, args.testnet)
        print(js_json(answer.get("data", answer)))
        return 0 if status == 200 else 1
    else:
        for line in sys.stdin:
            if line.strip():
                print(body_data(json.loads(line)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
