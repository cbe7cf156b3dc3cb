import type { RelayContext } from './context.js';

const TAB = 0x09;
const SPACE = 0x20;
const QUOTE = 0x22;
const COMMA = 0x2c;

const isWhitespace = (code: number) => code === SPACE || code === TAB;
/** etagc: any visible character but `"`, or obs-text. */
const isTagCharacter = (code: number) => code === 0x21 || (code >= 0x23 && code <= 0x7e) || code >= 0x80;

/**
 * The entity tags an `If-None-Match` field names, each as its opaque tag `"…"` (comparison is weak, so a `W/` is
 * dropped), or `*` for whatever exists; none for no field or one outside the grammar (`"*" / #entity-tag`, empty
 * list members allowed).
 */
export function namedTags(field: string | undefined): readonly string[] | '*' {
  if (field === undefined) return [];
  const value = field.trim();
  if (value === '*') return '*';
  const tags: string[] = [];
  let i = 0;
  while (i < value.length) {
    const code = value.charCodeAt(i);
    if (isWhitespace(code) || code === COMMA) {
      i++;
      continue;
    }
    const open = value.startsWith('W/', i) ? i + 2 : i;
    if (value.charCodeAt(open) !== QUOTE) return [];
    let close = open + 1;
    while (close < value.length && isTagCharacter(value.charCodeAt(close))) close++;
    if (value.charCodeAt(close) !== QUOTE) return [];
    tags.push(value.slice(open, close + 1));
    i = close + 1;
    while (i < value.length && isWhitespace(value.charCodeAt(i))) i++;
    if (i < value.length && value.charCodeAt(i) !== COMMA) return [];
  }
  return tags;
}

/** Whether an `If-None-Match` field names the current entity tag `tag` (a strong `"…"`): see namedTags. */
export function namesCurrentTag(field: string | undefined, tag: string): boolean {
  if (field === undefined) return false;
  if (field === tag) return true;
  const tags = namedTags(field);
  return tags === '*' || tags.includes(tag);
}

/**
 * Gives the answer the entity tag `tag`, to be revalidated on every use (`Cache-Control: no-cache`); when the
 * request's `If-None-Match` names it, the answer becomes 304 without a body and this returns true.
 */
export function answeredNotModified(ctx: Pick<RelayContext, 'req' | 'set' | 'status'>, tag: string): boolean {
  ctx.set('ETag', tag);
  ctx.set('Cache-Control', 'no-cache');
  if (!namesCurrentTag(ctx.req.headers['if-none-match'], tag)) return false;
  ctx.status = 304;
  return true;
}
