/**
 * Envoy's side of the wire, written from the field numbers of Envoy's API (not from sluice's
 * .proto files): RateLimitRequest encoded as Envoy's rate limit client builds it, and
 * RateLimitResponse decoded by field number, so that a wrong number or type in sluice's protos
 * fails these tests.
 */

export interface EnvoyDescriptor {
  entries: [string, string][];
  /** Set only when the route resolved an override. */
  limit?: { requestsPerUnit: number; unit: number };
  /** Set only when the route configures one (the wrapper is sent even for 0). */
  hitsAddend?: number;
}

export interface EnvoyRequest {
  domain: string;
  descriptors: EnvoyDescriptor[];
  /** Envoy always sets it, from the filter state, 0 when there is none. */
  hitsAddend?: number;
}

export const Code = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 } as const;
export const Unit = {
  UNKNOWN: 0,
  SECOND: 1,
  MINUTE: 2,
  HOUR: 3,
  DAY: 4,
  MONTH: 5,
  YEAR: 6,
  WEEK: 7,
} as const;

export interface DecodedStatus {
  code: number;
  currentLimit?: { name: string; requestsPerUnit: number; unit: number };
  limitRemaining: number;
  durationUntilReset?: number;
}

export interface DecodedResponse {
  overallCode: number;
  statuses: DecodedStatus[];
  responseHeaders: [string, string][];
  requestHeaders: [string, string][];
  rawBody: string;
  dynamicMetadata?: Buffer;
}

function varint(value: number | bigint): number[] {
  let v = BigInt(value);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

function tag(field: number, wire: number): number[] {
  return varint((field << 3) | wire);
}

function bytesField(field: number, bytes: Buffer | number[]): number[] {
  return [...tag(field, 2), ...varint(bytes.length), ...bytes];
}

function stringField(field: number, text: string): number[] {
  return text === '' ? [] : bytesField(field, Buffer.from(text, 'utf8'));
}

function varintField(field: number, value: number): number[] {
  return value === 0 ? [] : [...tag(field, 0), ...varint(value)];
}

export function encodeRequest(request: EnvoyRequest): Buffer {
  const out: number[] = [...stringField(1, request.domain)];
  for (const d of request.descriptors) {
    const body: number[] = [];
    for (const [key, value] of d.entries)
      body.push(...bytesField(1, [...stringField(1, key), ...stringField(2, value)]));
    if (d.limit !== undefined)
      body.push(
        ...bytesField(2, [...varintField(1, d.limit.requestsPerUnit), ...varintField(2, d.limit.unit)]),
      );
    if (d.hitsAddend !== undefined) body.push(...bytesField(3, varintField(1, d.hitsAddend)));
    out.push(...bytesField(2, body));
  }
  out.push(...varintField(3, request.hitsAddend ?? 0));
  return Buffer.from(out);
}

type Fields = Map<number, (bigint | Buffer)[]>;

/** Every field of a message by number: varints as bigint, length-delimited as bytes. */
export function fieldsOf(buffer: Buffer): Fields {
  const fields: Fields = new Map();
  let at = 0;
  const read = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buffer.length) {
    const key = Number(read());
    const field = key >> 3;
    const wire = key & 7;
    let value: bigint | Buffer;
    if (wire === 0) value = read();
    else if (wire === 1) {
      value = buffer.subarray(at, at + 8);
      at += 8;
    } else if (wire === 2) {
      const length = Number(read());
      value = buffer.subarray(at, at + length);
      at += length;
    } else throw new Error(`unexpected wire type ${wire} of field ${field}`);
    fields.set(field, [...(fields.get(field) ?? []), value]);
  }
  return fields;
}

const num = (f: Fields, n: number) => Number((f.get(n)?.at(-1) as bigint | undefined) ?? 0n);
const bytes = (f: Fields, n: number) => (f.get(n)?.at(-1) as Buffer | undefined) ?? Buffer.alloc(0);
const text = (f: Fields, n: number) => bytes(f, n).toString('utf8');

export function decodeResponse(buffer: Buffer): DecodedResponse {
  const f = fieldsOf(buffer);
  const headers = (n: number) =>
    ((f.get(n) ?? []) as Buffer[]).map((h) => {
      const hf = fieldsOf(h);
      return [text(hf, 1), text(hf, 2)] as [string, string];
    });
  return {
    overallCode: num(f, 1),
    statuses: ((f.get(2) ?? []) as Buffer[]).map((s) => {
      const sf = fieldsOf(s);
      const status: DecodedStatus = { code: num(sf, 1), limitRemaining: num(sf, 3) };
      if (sf.has(2)) {
        const lf = fieldsOf(bytes(sf, 2));
        status.currentLimit = { name: text(lf, 3), requestsPerUnit: num(lf, 1), unit: num(lf, 2) };
      }
      if (sf.has(4)) status.durationUntilReset = num(fieldsOf(bytes(sf, 4)), 1);
      return status;
    }),
    responseHeaders: headers(3),
    requestHeaders: headers(4),
    rawBody: text(f, 5),
    ...(f.has(6) ? { dynamicMetadata: bytes(f, 6) } : {}),
  };
}

/** A google.protobuf.Value decoded by field number: null, number, string, bool, struct or list. */
function valueOf(buffer: Buffer): unknown {
  const f = fieldsOf(buffer);
  if (f.has(1)) return null;
  if (f.has(2)) return bytes(f, 2).readDoubleLE(0);
  if (f.has(3)) return text(f, 3);
  if (f.has(4)) return num(f, 4) === 1;
  if (f.has(5)) return structOf(bytes(f, 5));
  if (f.has(6)) return ((fieldsOf(bytes(f, 6)).get(1) ?? []) as Buffer[]).map(valueOf);
  return null;
}

/** A google.protobuf.Struct (such as `dynamic_metadata`) as a plain object. */
export function structOf(buffer: Buffer): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const entry of (fieldsOf(buffer).get(1) ?? []) as Buffer[]) {
    const ef = fieldsOf(entry);
    out[text(ef, 1)] = valueOf(bytes(ef, 2));
  }
  return out;
}
