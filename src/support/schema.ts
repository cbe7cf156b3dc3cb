/** docs/api.md#support-forms--post-v1ticket-post-v1contact lengths; `\S` refuses whitespace-only text, which would make an empty ticket. */
const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength, pattern: '\\S' }) as const;

const email = { type: 'string', format: 'email', maxLength: 254 } as const;

export const ticketBody = {
  type: 'object',
  properties: {
    subject: text(1000),
    description: text(50_000),
    type: text(500),
    email,
  },
  required: ['subject', 'description', 'type', 'email'],
  additionalProperties: false,
} as const;

export const contactBody = {
  type: 'object',
  properties: {
    name: text(1000),
    email,
    message: text(50_000),
  },
  required: ['name', 'email', 'message'],
  additionalProperties: false,
} as const;
