/**
 * The decision API as an OpenAPI 3.1 document: served at /openapi.json, and the one source of
 * the request schemas the server validates bodies with (and the tests validate responses with).
 */
import { MAX_ITEMS } from './limits.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const nullableInteger = { type: ['integer', 'null'], minimum: 0 };

const schemas = {
  RequestFacts: {
    type: 'object',
    description:
      'A request as the caller received it: matched against the rules, and its key built as the policy says.',
    additionalProperties: false,
    required: ['method', 'path', 'address'],
    properties: {
      method: { type: 'string', minLength: 1, maxLength: 32 },
      path: {
        type: 'string',
        minLength: 1,
        maxLength: 8192,
        description: 'The request target; its query is read only by query:<name> key parts.',
      },
      host: { type: 'string', maxLength: 1024, description: 'Default: the host header.' },
      headers: {
        type: 'object',
        description: 'Header names (any case) to values.',
        additionalProperties: { type: 'string', maxLength: 8192 },
      },
      address: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        description: "The TCP peer's address; proxy headers are read only from the policy's trusted proxies.",
      },
    },
  },
  KeyedItem: {
    type: 'object',
    description:
      'A named rule and a key the caller built (pseudonymized by the server when the policy has a secret).',
    additionalProperties: false,
    required: ['rule', 'key'],
    properties: {
      rule: { type: 'string', minLength: 1, maxLength: 100 },
      key: { type: 'string', minLength: 1, maxLength: 4096 },
      cost: {
        type: 'integer',
        minimum: 0,
        maximum: 1_000_000_000_000,
        description: "Default: the rule's cost.",
      },
    },
  },
  RequestItem: {
    type: 'object',
    additionalProperties: false,
    required: ['request'],
    properties: {
      request: ref('RequestFacts'),
      cost: {
        type: 'integer',
        minimum: 0,
        maximum: 1_000_000_000_000,
        description: "Default: each rule's cost.",
      },
    },
  },
  Item: {
    description: 'Either a rule and a key, or a request.',
    if: { type: 'object', required: ['rule'] },
    then: ref('KeyedItem'),
    else: ref('RequestItem'),
  },
  Batch: {
    type: 'object',
    additionalProperties: false,
    required: ['items'],
    properties: { items: { type: 'array', minItems: 1, maxItems: MAX_ITEMS, items: ref('Item') } },
  },
  ForgetItem: {
    description:
      'A key, in every rule (or the named ones) and under every secret, or a request in the rules it matches.',
    if: { type: 'object', required: ['key'] },
    then: {
      type: 'object',
      additionalProperties: false,
      required: ['key'],
      properties: {
        key: { type: 'string', minLength: 1, maxLength: 4096 },
        rules: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 100 } },
      },
    },
    else: ref('RequestItem'),
  },
  ForgetBatch: {
    type: 'object',
    additionalProperties: false,
    required: ['items'],
    properties: { items: { type: 'array', minItems: 1, maxItems: MAX_ITEMS, items: ref('ForgetItem') } },
  },
  Decision: {
    type: 'object',
    description: "One limit's decision, as the library made it.",
    additionalProperties: false,
    required: [
      'rule',
      'name',
      'allowed',
      'limit',
      'capacity',
      'remaining',
      'cost',
      'retryAfterMs',
      'resetMs',
      'source',
    ],
    properties: {
      rule: { type: 'string' },
      name: { type: 'string', description: "The limit's name (the rule's for its first limit)." },
      allowed: { type: 'boolean' },
      limit: { type: 'integer' },
      capacity: { type: 'integer' },
      remaining: { type: 'integer', minimum: 0 },
      cost: {
        type: 'integer',
        minimum: 0,
        description:
          'The units this decision asked for. 0: nothing was charged, for a peek and for each limit of a refused all-or-nothing rule that would have admitted (its remaining is what it holds).',
      },
      retryAfterMs: { ...nullableInteger, description: 'null: this cost can never be admitted.' },
      resetMs: { type: 'integer', minimum: 0 },
      source: { enum: ['store', 'insurance', 'fail-open', 'shadow'] },
    },
  },
  Verdict: {
    type: 'object',
    additionalProperties: false,
    required: ['allowed', 'rules', 'refusedBy', 'remaining', 'retryAfterMs', 'resetMs', 'decisions'],
    properties: {
      allowed: { type: 'boolean' },
      rules: { type: 'array', items: { type: 'string' }, description: 'The rules asked, in order.' },
      refusedBy: { type: 'array', items: { type: 'string' }, description: 'The limits that refused.' },
      remaining: { ...nullableInteger, description: 'Of the decisive limit; null when no limit decided.' },
      retryAfterMs: {
        ...nullableInteger,
        description: 'Of the decisive limit; null when none decided or never.',
      },
      resetMs: { ...nullableInteger, description: 'Of the decisive limit; null when no limit decided.' },
      decisions: { type: 'array', items: ref('Decision') },
    },
  },
  DecisionResult: {
    type: 'object',
    description: 'A verdict and what to answer the client with.',
    additionalProperties: false,
    required: [
      'allowed',
      'status',
      'rules',
      'refusedBy',
      'remaining',
      'retryAfterMs',
      'resetMs',
      'decisions',
      'headers',
    ],
    properties: {
      ...{
        allowed: { type: 'boolean' },
        rules: { type: 'array', items: { type: 'string' } },
        refusedBy: { type: 'array', items: { type: 'string' } },
        remaining: nullableInteger,
        retryAfterMs: nullableInteger,
        resetMs: nullableInteger,
        decisions: { type: 'array', items: ref('Decision') },
      },
      status: {
        type: 'integer',
        description:
          '200: go on (add headers to your response). Otherwise answer with this status, headers and body.',
      },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      body: {
        description:
          "The body to answer with, when not allowed: a problem body, or the text of a rule's own response body (its response.contentType in headers).",
        oneOf: [ref('Problem'), { type: 'string' }],
      },
    },
  },
  Decisions: {
    type: 'object',
    additionalProperties: false,
    required: ['results'],
    properties: { results: { type: 'array', items: ref('DecisionResult') } },
  },
  Verdicts: {
    type: 'object',
    additionalProperties: false,
    required: ['results'],
    properties: { results: { type: 'array', items: ref('Verdict') } },
  },
  Cleared: {
    type: 'object',
    additionalProperties: false,
    required: ['results'],
    properties: {
      results: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['rules', 'buckets'],
          properties: {
            rules: { type: 'array', items: { type: 'string' } },
            buckets: { type: 'integer', minimum: 0, description: 'How many buckets were cleared.' },
          },
        },
      },
    },
  },
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details, with a machine code.',
    required: ['type', 'title', 'status', 'detail', 'code'],
    properties: {
      type: { type: 'string' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      code: { type: 'string' },
      limits: { type: 'array', items: { type: 'string' } },
      errors: {
        type: 'array',
        items: {
          type: 'object',
          required: ['path', 'message'],
          properties: { path: { type: 'string' }, message: { type: 'string' } },
        },
      },
    },
  },
  Health: {
    type: 'object',
    additionalProperties: false,
    required: ['status'],
    properties: {
      status: { enum: ['ok', 'unavailable'] },
      store: { type: 'string' },
      upstreams: {
        type: 'array',
        description: "Gateway mode: whether each route's upstream accepts connections (/readyz only).",
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['route', 'status'],
          properties: {
            route: { type: 'string' },
            status: { enum: ['ok', 'unavailable'] },
            reason: { type: 'string', description: 'Why it is unavailable, in words.' },
          },
        },
      },
    },
  },
};

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
});
const json = (description: string, schema: string) => ({
  description,
  content: { 'application/json': { schema: ref(schema) } },
});
const errors = {
  '400': problem('The body is not JSON of the documented shape, or names a rule the policy has not.'),
  '401': problem('No token, or one the policy does not hold (only when the policy has tokens).'),
  '403': problem(
    'The token lacks the scope (insufficient_scope), or a browser on another site or origin asks to reset or forget (cross_site_request).',
  ),
  '421': problem(
    'Without tokens, a Host that is neither loopback nor named by hosts or --allowed-host (misdirected_request).',
  ),
  '429': problem(
    'This address failed authentication too often; try again after Retry-After seconds (too_many_failed_attempts).',
  ),
  '413': problem('The body is larger than 1 MiB.'),
  '415': problem('The body is not application/json.'),
};
const post = (summary: string, scope: string, body: string, result: string, description: string) => ({
  post: {
    summary,
    description,
    security: [{ bearer: [scope] }],
    requestBody: { required: true, content: { 'application/json': { schema: ref(body) } } },
    responses: { '200': json('One result per item, in order.', result), ...errors },
  },
});

/** The OpenAPI 3.1 document of the decision API. */
export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'sluice decision API',
    version: '1',
    description: 'Rate-limit decisions from a policy file. See docs/server.md.',
  },
  paths: {
    '/v1/decisions': post(
      'Decide and charge',
      'decide',
      'Batch',
      'Decisions',
      'Each item is decided in order, as the library decides: the rules a request matches are charged in file order and the first refusal stops.',
    ),
    '/v1/peek': post(
      'What a decision would say, charging nothing',
      'decide',
      'Batch',
      'Verdicts',
      'Lists are not consulted.',
    ),
    '/v1/reset': post(
      'Clear the buckets of a key or request',
      'admin',
      'Batch',
      'Cleared',
      'Under the current secret.',
    ),
    '/v1/forget': post(
      'Erase a key everywhere',
      'admin',
      'ForgetBatch',
      'Cleared',
      'In every rule (or the named ones) and under every secret, current and previous.',
    ),
    '/healthz': { get: { summary: 'The process is up', responses: { '200': json('Up.', 'Health') } } },
    '/readyz': {
      get: {
        summary:
          "The policy is loaded, the store answers and, in gateway mode, every route's upstream accepts connections",
        responses: { '200': json('Ready.', 'Health'), '503': json('Not ready.', 'Health') },
      },
    },
    '/openapi.json': {
      get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } },
    },
  },
  components: {
    schemas,
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
  },
} as const;
