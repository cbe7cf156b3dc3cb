/** GitHub's heading anchors of a Markdown text: lower case, punctuation dropped, each space a hyphen. */
export function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  for (const [, heading] of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    found.add(
      heading!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    );
  }
  return found;
}

/** The fenced `sh` blocks of a Markdown text, one string each. */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map(([, body]) => body!);
}
