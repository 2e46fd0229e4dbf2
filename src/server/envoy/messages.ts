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

/** google.protobuf.Value as proto-loader encodes it. */
export type ValueMessage =
  | { null_value: 'NULL_VALUE' }
  | { number_value: number }
  | { string_value: string }
  | { bool_value: boolean }
  | { struct_value: StructMessage }
  | { list_value: { values: ValueMessage[] } };

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
  if (value === null || value === undefined) return { null_value: 'NULL_VALUE' };
  if (typeof value === 'number') return { number_value: value };
  if (typeof value === 'boolean') return { bool_value: value };
  if (typeof value === 'string') return { string_value: value };
  if (Array.isArray(value)) return { list_value: { values: value.map(toValue) } };
  if (typeof value === 'object') return { struct_value: toStruct(value as Record<string, unknown>) };
  return { string_value: String(value) };
}

/** A JSON object as a google.protobuf.Struct. */
export function toStruct(object: Record<string, unknown>): StructMessage {
  const fields: Record<string, ValueMessage> = {};
  for (const [key, value] of Object.entries(object)) fields[key] = toValue(value);
  return { fields };
}
