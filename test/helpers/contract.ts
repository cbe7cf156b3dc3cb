import { AssertionError } from 'chai';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ApiProfile } from '../../src/core/config/config.js';
import { STATUS, type ErrorCode } from '../../src/core/errors.js';
import { buildOpenApi } from '../../src/contract/document.js';
import { API_ROUTES } from '../../src/features.js';

// ajv-formats is CommonJS; under nodenext its default export is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * The test client's check of every response against the OpenAPI document the relay serves: a response whose
 * status, required headers or JSON body the document does not describe fails the test that received it.
 */

interface Header {
  $ref?: string;
  required?: boolean;
}

interface ResponseObject {
  headers?: Record<string, Header>;
  content?: Record<string, unknown>;
}

interface Route {
  pattern: RegExp;
  template: string;
  methods: Record<
    string,
    {
      responses: Record<string, ResponseObject>;
      parameters?: { name: string }[];
      requestBody?: { content: Record<string, unknown> };
    }
  >;
}

export interface Exchange {
  method: string;
  /** The request target: a path, with or without a query. */
  target: string;
  /** What the request sent, when a test sent a body: its Content-Type and text. */
  request?: { type: string; text: string };
  status: number;
  headers: Headers | Record<string, string>;
  text: string;
}

const DOCUMENT_ID = 'openapi.json';

export class ContractChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly routes: Route[];
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly headerComponents: Record<string, Header>;

  constructor(document: Record<string, unknown> = buildOpenApi(API_ROUTES)) {
    addFormats(this.ajv);
    this.ajv.addSchema(document, DOCUMENT_ID);
    const { paths, components } = document as {
      paths: Record<string, Route['methods']>;
      components: { headers: Record<string, Header> };
    };
    this.headerComponents = components.headers;
    this.routes = Object.entries(paths).map(([template, methods]) => ({
      template,
      methods,
      pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }));
  }

  /** Throws an AssertionError naming what disagrees; returns quietly when the document describes the response. */
  check(exchange: Exchange): void {
    const path = exchange.target.split('?')[0]!;
    if (path.startsWith('/v1/socket/')) return; // socket.io's engine: docs/asyncapi.yaml
    const method = exchange.method.toLowerCase();
    const route = this.routes.find((candidate) => candidate.pattern.test(path));
    const operation = route?.methods[method === 'head' ? 'get' : method];
    if (!route || !operation) return this.checkOutsideOperations(exchange, route);
    const pointer = `#/paths/${escape(route.template)}/${method === 'head' ? 'get' : method}/responses/${exchange.status}`;
    const response = operation.responses[String(exchange.status)];
    if (!response)
      this.fail(
        exchange,
        `status ${exchange.status} is not documented for ${method.toUpperCase()} ${route.template}`,
      );
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const required =
        header.required ?? this.headerComponents[header.$ref?.split('/').pop() ?? '']?.required;
      if (required && headerOf(exchange.headers, name) === null)
        this.fail(exchange, `header ${name} is missing`);
    }
    if (exchange.status === 200) this.checkAccepted(exchange, route, method === 'head' ? 'get' : method);
    if (method === 'head' || !response.content?.['application/json']) return;
    this.checkBody(exchange, `${pointer}/content/application~1json/schema`);
  }

  /**
   * A request the relay accepted must be one the document calls valid: its path parameters and its JSON body.
   * (The converse does not hold: some rules, such as a Solana sync's key list, are words in the document.)
   */
  private checkAccepted(exchange: Exchange, route: Route, method: string): void {
    const operation = route.methods[method]!;
    const base = `#/paths/${escape(route.template)}/${method}`;
    const path = exchange.target.split('?')[0]!.split('/');
    route.template.split('/').forEach((segment, i) => {
      const name = /^\{(.+)\}$/.exec(segment)?.[1];
      if (name === undefined) return;
      const index = operation.parameters?.findIndex((parameter) => parameter.name === name) ?? -1;
      const value = decodeURIComponent(path[i]!);
      this.validate(exchange, `${base}/parameters/${index}/schema`, value, `path parameter ${name}`);
    });
    const sent = exchange.request;
    if (!operation.requestBody || !sent || sent.type.split(';')[0]!.trim() !== 'application/json') return;
    this.validate(
      exchange,
      `${base}/requestBody/content/application~1json/schema`,
      JSON.parse(sent.text),
      'the request body',
    );
  }

  /** An unknown path (404), another method (405, or 204 to OPTIONS): the error envelope with a matching code. */
  private checkOutsideOperations(exchange: Exchange, route: Route | undefined): void {
    if (exchange.method === 'OPTIONS' && route && exchange.status === 204) return;
    const body = this.checkBody(exchange, '#/components/schemas/Error') as { error: { code: ErrorCode } };
    const expected = route ? 'METHOD_NOT_ALLOWED' : 'NOT_FOUND';
    const code = body.error.code;
    if (STATUS[code] !== exchange.status)
      this.fail(exchange, `${code} answered with status ${exchange.status}`);
    if (code !== expected && STATUS[code] === STATUS[expected])
      this.fail(exchange, `${code} where ${expected} belongs`);
    if (code === 'METHOD_NOT_ALLOWED' && headerOf(exchange.headers, 'Allow') === null)
      this.fail(exchange, 'a 405 without Allow');
  }

  private checkBody(exchange: Exchange, pointer: string): unknown {
    let body: unknown;
    try {
      body = JSON.parse(exchange.text);
    } catch {
      this.fail(exchange, 'the body is not JSON');
    }
    this.validate(exchange, pointer, body, 'body');
    return body;
  }

  private validate(exchange: Exchange, pointer: string, value: unknown, what: string): void {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
      this.validators.set(pointer, validate);
    }
    if (!validate(value)) this.fail(exchange, this.ajv.errorsText(validate.errors, { dataVar: what }));
  }

  private fail(exchange: Exchange, why: string): never {
    throw new AssertionError(
      `${exchange.method} ${exchange.target} → ${exchange.status} disagrees with the OpenAPI document: ${why}\n${exchange.text.slice(0, 500)}`,
    );
  }
}

function escape(template: string): string {
  return template.replace(/~/g, '~0').replace(/\//g, '~1');
}

function headerOf(headers: Headers | Record<string, string>, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  return headers[name.toLowerCase()] ?? null;
}

const checkers = new Map<ApiProfile, ContractChecker>();
const profiles = new Map<string, ApiProfile>();

/** Tells the check which profile the relay at `base` runs (standard unless told). */
export function servesProfile(base: string, profile: ApiProfile): void {
  profiles.set(base, profile);
}

/** The check every test HTTP helper runs on what it receives, against the document of the relay's profile. */
export function checkContract(base: string, exchange: Exchange): void {
  const profile = profiles.get(base) ?? 'standard';
  let checker = checkers.get(profile);
  if (!checker) {
    checker = new ContractChecker(buildOpenApi(API_ROUTES, profile));
    checkers.set(profile, checker);
  }
  checker.check(exchange);
}
