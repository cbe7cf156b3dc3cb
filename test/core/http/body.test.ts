import { expect } from 'chai';
import { AppError } from '../../../src/core/errors.js';
import { JSON_LIMITS, parseJsonObject } from '../../../src/core/http/body.js';

/** The refusal parseJsonObject throws for `bytes`, as code and message. */
function refusal(bytes: Buffer): { code: string; message: string } {
  try {
    parseJsonObject(bytes);
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    const { code, message } = err as AppError;
    return { code, message };
  }
  throw new Error('parsed');
}

const NOT_UTF8 = { code: 'INVALID_JSON', message: 'The request body is not valid UTF-8.' };
const NOT_JSON = { code: 'INVALID_JSON', message: 'The request body is not valid JSON.' };

describe('parseJsonObject: text decoding', () => {
  it('decodes UTF-8 text as it is, multi-byte characters included', () => {
    const text = '{"note":"café – 署名 🔑","escaped":"\\u00e9\\\\"}';
    expect(parseJsonObject(Buffer.from(text, 'utf8'))).to.deep.equal({
      note: 'café – 署名 🔑',
      escaped: 'é\\',
    });
  });

  it('refuses bytes that are not well-formed UTF-8 rather than replacing them', () => {
    expect(refusal(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]))).to.deep.equal(
      NOT_UTF8,
    );
    // Latin-1 "é", a lone continuation byte, an overlong "/", an encoded surrogate, a cut-off 4-byte sequence.
    for (const bad of [[0xe9], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x94]]) {
      const bytes = Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bad), Buffer.from('"}')]);
      expect(refusal(bytes), bad.join(',')).to.deep.equal(NOT_UTF8);
    }
  });

  it('refuses UTF-16 and a byte order mark as JSON it cannot read', () => {
    expect(refusal(Buffer.from('{"a":1}', 'utf16le'))).to.deep.equal(NOT_JSON);
    expect(refusal(Buffer.from('\ufeff{"a":1}', 'utf8'))).to.deep.equal(NOT_JSON);
  });

  it('refuses an empty body, and JSON that is not one object', () => {
    expect(refusal(Buffer.alloc(0))).to.deep.equal(NOT_JSON);
    const notObject = { code: 'INVALID_JSON', message: 'The request body must be a JSON object.' };
    for (const text of ['[]', '"text"', '1', 'null'])
      expect(refusal(Buffer.from(text))).to.deep.equal(notObject);
  });

  it('refuses an own __proto__ key at any depth', () => {
    expect(refusal(Buffer.from('{"a":[{"__proto__":{"x":1}}]}'))).to.deep.equal(NOT_JSON);
  });

  it(`takes nesting up to depth ${JSON_LIMITS.depth}, and refuses one more`, () => {
    const nested = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
    expect(() => parseJsonObject(Buffer.from(nested(JSON_LIMITS.depth)))).not.to.throw();
    expect(refusal(Buffer.from(nested(JSON_LIMITS.depth + 1)))).to.deep.equal({
      code: 'INVALID_JSON',
      message: 'The request body is nested deeper than any request needs.',
    });
  });

  it('counts no bracket, comma or quote inside a string', () => {
    const text = `{"a":"${'[{,'.repeat(2000)}\\"\\\\"}`;
    expect(parseJsonObject(Buffer.from(text))).to.deep.equal({ a: `${'[{,'.repeat(2000)}"\\` });
  });
});
