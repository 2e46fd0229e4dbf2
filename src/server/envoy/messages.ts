/**
 * The messages of Envoy's rate limit service as @grpc/proto-loader hands them over and takes
 * them back (field names as in the .proto files, enums as their names, 64-bit numbers as numbers).
 */

export interface EntryMessage {
  key: string;
  value: string;
}

export interface DescriptorMessage {
  entries: EntryMessage[];
  /** null when the descriptor carries no override. */
  limit: { requests_per_unit: number; unit: string } | null;
  /** null when the descriptor carries no hits_addend of its own (0 is one). */
  hits_addend: { value: number | string } | null;
}

export interface RequestMessage {
  domain: string;
  descriptors: DescriptorMessage[];
  hits_addend: number;
}

export type CodeName = 'OK' | 'OVER_LIMIT';

export interface StatusMessage {
  code: CodeName;
  current_limit?: { name: string; requests_per_unit: number; unit: string };
  limit_remaining: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface HeaderMessage {
  key: string;
  value: string;
}

/** google.protobuf.Value as proto-loader encodes it (protobufjs defines the well-known types with camelCase names). */
export type ValueMessage =
  | { nullValue: 'NULL_VALUE' }
  | { numberValue: number }
  | { stringValue: string }
  | { boolValue: boolean }
  | { structValue: StructMessage }
  | { listValue: { values: ValueMessage[] } };

export interface StructMessage {
  fields: Record<string, ValueMessage>;
}

export interface ResponseMessage {
  overall_code: CodeName;
  statuses: StatusMessage[];
  response_headers_to_add: HeaderMessage[];
  request_headers_to_add: HeaderMessage[];
  raw_body?: Buffer;
  dynamic_metadata?: StructMessage;
}

/** A JSON value as a google.protobuf.Value. */
export function toValue(value: unknown): ValueMessage {
  if (value === null || value === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'number') return { numberValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'string') return { stringValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map(toValue) } };
  if (typeof value === 'object') return { structValue: toStruct(value as Record<string, unknown>) };
  return { stringValue: String(value) };
}

/** A JSON object as a google.protobuf.Struct. */
export function toStruct(object: Record<string, unknown>): StructMessage {
  const fields: Record<string, ValueMessage> = {};
  for (const [key, value] of Object.entries(object)) fields[key] = toValue(value);
  return { fields };
}
