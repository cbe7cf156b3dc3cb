/**
 * The fields an app adds to sign a write or a join (docs/api.md#identity-signed-requests). The relay checks them
 * (verify.ts, which builds its patterns from these) and removes them before the body's own validation.
 */
export const credentialProperties = {
  signature: {
    type: 'string',
    pattern: '^[A-Za-z0-9+/]{86}[AEIMQUYcgkosw048]=$',
    description:
      'BIP-137 "Bitcoin Signed Message" signature of `message`, base64 of 65 bytes (header 31–34: compressed key)',
  },
  message: {
    type: 'string',
    maxLength: 1024,
    description:
      'JSON text {"timestamp": epoch ms, "action": purpose word, "identity": wkIdentity, "nonce": 64 hex, "data": ' +
      'hex SHA-256 of JSON.stringify(this body without the four fields)}; at most 1,024 bytes',
  },
  publicKey: {
    type: 'string',
    pattern: '^0[23][0-9a-fA-F]{64}$',
    description: 'the signing key, compressed (66 hex): one of the two keys of witnessScript',
  },
  witnessScript: {
    type: 'string',
    pattern: '^(?:[0-9a-fA-F]{2}){1,10000}$',
    description:
      "hex of the pair's 2-of-2 script 52 21 <key A> 21 <key B> 52 ae, whose SHA-256 is wkIdentity's program",
  },
} as const;
