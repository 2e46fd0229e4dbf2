import { invalid } from './plan.js';
import type {
  DescriptorMessage,
  EntryMessage,
  RequestMessage,
  ResponseMessage,
  StructMessage,
  ValueMessage,
} from './messages.js';

/**
 * The proto3 JSON mapping of a RateLimitRequest, as `POST /json` takes it (envoyproxy/ratelimit's
 * HTTP endpoint): each field by its JSON name or its proto name, enums by name or number, 64-bit
 * numbers as numbers or strings; an unknown field, a wrong type or a number out of range is a
 * SLUICE_ARGUMENT error (400) naming the field, never quoting the value.
 */
export function requestFromJson(body: unknown): RequestMessage {
  const root = object(body, 'the body');
  known(root, ['domain', 'descriptors', 'hitsAddend', 'hits_addend'], 'the body');
  const list = field(root, 'descriptors');
  const descriptors = list === undefined ? [] : array(list, 'descriptors').map(descriptorFromJson);
  return {
    domain: string(field(root, 'domain'), 'domain'),
    descriptors,
    hits_addend: integer(field(root, 'hitsAddend', 'hits_addend'), 'hitsAddend', 0xffff_ffff),
  };
}

const UNIT_NAMES = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'];

function descriptorFromJson(value: unknown, i: number): DescriptorMessage {
  const at = `descriptors[${i}]`;
  const d = object(value, at);
  known(d, ['entries', 'limit', 'hitsAddend', 'hits_addend'], at);
  const entries = field(d, 'entries');
  const limit = field(d, 'limit');
  const hits = field(d, 'hitsAddend', 'hits_addend');
  return {
    entries:
      entries === undefined
        ? []
        : array(entries, `${at}.entries`).map((e, j) => entryFromJson(e, `${at}.entries[${j}]`)),
    limit: limit === undefined || limit === null ? null : limitFromJson(limit, `${at}.limit`),
    hits_addend:
      hits === undefined || hits === null
        ? null
        : { value: integer(hits, `${at}.hitsAddend`, Number.MAX_SAFE_INTEGER) },
  };
}

function entryFromJson(value: unknown, at: string): EntryMessage {
  const e = object(value, at);
  known(e, ['key', 'value'], at);
  return { key: string(field(e, 'key'), `${at}.key`), value: string(field(e, 'value'), `${at}.value`) };
}

function limitFromJson(value: unknown, at: string): { requests_per_unit: number; unit: string } {
  const l = object(value, at);
  known(l, ['requestsPerUnit', 'requests_per_unit', 'unit'], at);
  const unit = field(l, 'unit');
  let name: string;
  if (unit === undefined || unit === null) name = 'UNKNOWN';
  else if (typeof unit === 'number' && Number.isInteger(unit) && unit >= 0 && unit < UNIT_NAMES.length)
    name = UNIT_NAMES[unit]!;
  else if (typeof unit === 'string' && UNIT_NAMES.includes(unit)) name = unit;
  else throw invalid(`${at}.unit must be a unit name (SECOND, MINUTE, HOUR, DAY, MONTH or YEAR)`);
  return {
    requests_per_unit: integer(
      field(l, 'requestsPerUnit', 'requests_per_unit'),
      `${at}.requestsPerUnit`,
      0xffff_ffff,
    ),
    unit: name,
  };
}

function object(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${at} must be an object`);
  return value as Record<string, unknown>;
}

function array(value: unknown, at: string): unknown[] {
  if (value === null) return [];
  if (!Array.isArray(value)) throw invalid(`${at} must be a list`);
  return value;
}

function known(value: Record<string, unknown>, names: readonly string[], at: string): void {
  for (const name of Object.keys(value))
    if (!names.includes(name)) throw invalid(`${at} has a field that is not part of the message`);
}

/** A field by its JSON name or its proto name (both is an error, as protojson says). */
function field(value: Record<string, unknown>, name: string, protoName?: string): unknown {
  const own = Object.hasOwn(value, name) ? value[name] : undefined;
  if (protoName === undefined || !Object.hasOwn(value, protoName)) return own;
  if (Object.hasOwn(value, name)) throw invalid(`${name} is given twice (by its two names)`);
  return value[protoName];
}

function string(value: unknown, at: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw invalid(`${at} must be a string`);
  return value;
}

function integer(value: unknown, at: string, max: number): number {
  if (value === undefined || value === null) return 0;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max)
    throw invalid(`${at} must be a whole number from 0 to ${max}`);
  return n;
}

/**
 * A RateLimitResponse in the proto3 JSON mapping: lowerCamelCase names, enums by name, durations
 * as "41s", bytes in base64, fields holding their default value left out.
 */
export function responseToJson(response: ResponseMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { overallCode: response.overall_code };
  if (response.statuses.length > 0)
    out.statuses = response.statuses.map((s) => {
      const status: Record<string, unknown> = { code: s.code };
      if (s.current_limit !== undefined) {
        const limit: Record<string, unknown> = { unit: s.current_limit.unit };
        if (s.current_limit.name !== '') limit.name = s.current_limit.name;
        if (s.current_limit.requests_per_unit !== 0)
          limit.requestsPerUnit = s.current_limit.requests_per_unit;
        status.currentLimit = limit;
      }
      if (s.limit_remaining !== 0) status.limitRemaining = s.limit_remaining;
      if (s.duration_until_reset !== undefined)
        status.durationUntilReset = `${s.duration_until_reset.seconds}s`;
      return status;
    });
  if (response.response_headers_to_add.length > 0)
    out.responseHeadersToAdd = response.response_headers_to_add;
  if (response.request_headers_to_add.length > 0) out.requestHeadersToAdd = response.request_headers_to_add;
  if (response.raw_body !== undefined && response.raw_body.length > 0)
    out.rawBody = response.raw_body.toString('base64');
  if (response.dynamic_metadata !== undefined) out.dynamicMetadata = structToJson(response.dynamic_metadata);
  return out;
}

function structToJson(struct: StructMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(struct.fields)) out[key] = valueToJson(value);
  return out;
}

function valueToJson(value: ValueMessage): unknown {
  if ('nullValue' in value) return null;
  if ('numberValue' in value) return value.numberValue;
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('structValue' in value) return structToJson(value.structValue);
  return value.listValue.values.map(valueToJson);
}
