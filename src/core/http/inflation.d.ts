// The part of inflation's API body.ts uses. @types/inflation names the option `gzip`; the code reads `encoding`.
declare module 'inflation' {
  import type { Readable } from 'node:stream';

  export default function inflate(stream: Readable, options?: { encoding?: string }): Readable;
}
