import { isMap, isScalar, isSeq, type Node, type Pair, type Scalar, type YAMLMap } from 'yaml';
import { EnvoyConfigProblem, checkKeys, sourceOf } from './config-check.js';
import { ENVOY_UNITS, type EnvoyUnit } from './units.js';

/**
 * A limit of envoyproxy/ratelimit's configuration, as a descriptor that matches it finds it.
 * `path` is where it is configured (`domain.key_value.key`): the label it is counted under in
 * metrics and the name it carries in headers, made of the configuration only.
 */
export interface EnvoyRule {
  readonly path: string;
  /** `rate_limit.name`, empty when none: what other rules' `replaces` name. */
  readonly name: string;
  /** undefined for an `unlimited` rule. */
  readonly unit: EnvoyUnit | undefined;
  readonly requestsPerUnit: number;
  readonly unlimited: boolean;
  readonly shadow: boolean;
  readonly quota: boolean;
  readonly detailed: boolean;
  readonly replaces: readonly string[];
  /** The descriptor's `metadata`, merged into `dynamic_metadata` when it passed. */
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  /**
   * sluice's own option: a token bucket of this burst refilling `requestsPerUnit` per unit,
   * instead of upstream's fixed window. undefined: the fixed window.
   */
  readonly burst: number | undefined;
}

/** One level of a domain's descriptors. */
export interface EnvoyNode {
  /** By `key_value`, or `key` for a key configured without a value. */
  readonly children: Map<string, EnvoyNode>;
  /** The children whose composite key holds `*`, in file order, split on `*` once. */
  readonly wildcards: { readonly key: string; readonly parts: readonly string[] }[];
  readonly rule: EnvoyRule | undefined;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
}

/** A configuration file (or an inline domain) as read: its domain and its root level. */
export interface EnvoyDomainSource {
  readonly domain: string;
  readonly root: YAMLMap;
}

/** The domains of every file, by name. */
export type EnvoyDomains = ReadonlyMap<string, EnvoyNode>;

/**
 * Builds the domains of several configurations as envoyproxy/ratelimit loads its `config/`
 * directory: each must name a domain of its own, and is checked as upstream checks it, throwing
 * the first problem with upstream's reason. `checkKeys` runs first on each (see config-check.ts).
 */
export function buildDomains(
  sources: readonly { map: YAMLMap; at: (problem: EnvoyConfigProblem) => never }[],
): EnvoyDomains {
  const domains = new Map<string, EnvoyNode>();
  for (const { map, at } of sources) {
    try {
      checkKeys(map);
      const domainNode = valueOf(map, 'domain');
      const domain = stringField(domainNode);
      if (domain === '') throw new EnvoyConfigProblem('config file cannot have empty domain', map);
      if (domains.has(domain))
        throw new EnvoyConfigProblem(`duplicate domain '${domain}' in config file`, domainNode);
      const root = newNode(false, false, undefined);
      loadDescriptors(root, `${domain}.`, valueOf(map, 'descriptors'));
      domains.set(domain, root);
    } catch (error) {
      if (error instanceof EnvoyConfigProblem) at(error);
      throw error;
    }
  }
  return domains;
}

function newNode(valueToMetric: boolean, shareThreshold: boolean, rule: EnvoyRule | undefined): EnvoyNode {
  return { children: new Map(), wildcards: [], rule, valueToMetric, shareThreshold };
}

function loadDescriptors(level: EnvoyNode, parentKey: string, list: Node | null | undefined): void {
  if (list === null || list === undefined || (isScalar(list) && list.value === null)) return;
  if (!isSeq(list)) throw unmarshal(list, '[]config.YamlDescriptor');
  for (const item of list.items as Node[]) {
    const map = item as YAMLMap;
    const key = stringField(valueOf(map, 'key'));
    if (key === '') throw new EnvoyConfigProblem('descriptor has empty key', map);
    const value = stringField(valueOf(map, 'value'));
    const finalKey = value === '' ? key : `${key}_${value}`;
    const fullKey = parentKey + finalKey;
    if (level.children.has(finalKey))
      throw new EnvoyConfigProblem(`duplicate descriptor composite key '${fullKey}'`, map);
    const metadataNode = valueOf(map, 'metadata');
    const rule = readRule(map, fullKey, metadataNode);
    const shareThreshold = boolField(valueOf(map, 'share_threshold'));
    if (shareThreshold && !finalKey.includes('*'))
      throw new EnvoyConfigProblem(
        `share_threshold can only be used with wildcard values (containing '*'), but found key '${finalKey}'`,
        map,
      );
    if (finalKey.includes('*')) level.wildcards.push({ key: finalKey, parts: finalKey.split('*') });
    const child = newNode(boolField(valueOf(map, 'value_to_metric')), shareThreshold, rule);
    loadDescriptors(child, `${fullKey}.`, valueOf(map, 'descriptors'));
    level.children.set(finalKey, child);
  }
}

function readRule(map: YAMLMap, path: string, metadataNode: Node | null | undefined): EnvoyRule | undefined {
  const node = valueOf(map, 'rate_limit');
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) return undefined;
  if (!isMap(node)) throw unmarshal(node, 'config.YamlRateLimit');
  const unlimited = boolField(valueOf(node, 'unlimited'));
  const unitNode = valueOf(node, 'unit');
  const unitText = stringField(unitNode);
  const unit = ENVOY_UNITS.find((u) => u === unitText.toUpperCase());
  if (unlimited) {
    if (unit !== undefined)
      throw new EnvoyConfigProblem('should not specify rate limit unit when unlimited', unitNode);
  } else if (unit === undefined) {
    throw new EnvoyConfigProblem(`invalid rate limit unit '${unitText}'`, unitNode ?? node);
  }
  const name = stringField(valueOf(node, 'name'));
  const replacesNode = valueOf(node, 'replaces');
  const replaces: string[] = [];
  if (isSeq(replacesNode))
    for (const entry of replacesNode.items as YAMLMap[]) replaces.push(stringField(valueOf(entry, 'name')));
  else if (replacesNode !== undefined && replacesNode !== null && !isNull(replacesNode))
    throw unmarshal(replacesNode, '[]config.yamlReplaces');
  for (let i = 0; i < replaces.length; i++) {
    const at = (replacesNode as { items: Node[] }).items[i];
    if (replaces[i] === '') throw new EnvoyConfigProblem('should not have an empty replaces entry', at);
    if (replaces[i] === name)
      throw new EnvoyConfigProblem('replaces should not contain name of same descriptor', at);
  }
  return {
    path,
    name,
    unit: unlimited ? undefined : unit,
    requestsPerUnit: uint32Field(valueOf(node, 'requests_per_unit')),
    unlimited,
    shadow: boolField(valueOf(map, 'shadow_mode')),
    quota: boolField(valueOf(map, 'quota_mode')),
    detailed: boolField(valueOf(map, 'detailed_metric')),
    replaces,
    metadata: metadataOf(metadataNode),
    burst: unlimited
      ? undefined
      : burstOf(valueOf(map, 'sluice'), unit!, uint32Field(valueOf(node, 'requests_per_unit'))),
  };
}

/** The largest rate a token bucket refills: 10^6 per period. */
const MAX_TOKEN_RATE = 1_000_000;

/**
 * sluice's options of a descriptor: `algorithm` (`fixed-window`, upstream's, or `token-bucket`)
 * and a token bucket's `burst` (its requests_per_unit when not given).
 */
function burstOf(node: Node | null | undefined, unit: EnvoyUnit, rate: number): number | undefined {
  if (node === undefined || node === null || isNull(node)) return undefined;
  if (!isMap(node)) throw new EnvoyConfigProblem('sluice must be a mapping of algorithm and burst', node);
  for (const pair of node.items as Pair[]) {
    const key = isScalar(pair.key) ? pair.key.value : undefined;
    if (key !== 'algorithm' && key !== 'burst')
      throw new EnvoyConfigProblem('sluice has a key other than algorithm and burst', pair.key as Node);
  }
  const algorithmNode = valueOf(node, 'algorithm');
  const algorithm = stringField(algorithmNode);
  const burstNode = valueOf(node, 'burst');
  if (algorithm === '' || algorithm === 'fixed-window') {
    if (burstNode !== undefined)
      throw new EnvoyConfigProblem('sluice.burst needs sluice.algorithm token-bucket', burstNode);
    return undefined;
  }
  if (algorithm !== 'token-bucket')
    throw new EnvoyConfigProblem('sluice.algorithm must be fixed-window or token-bucket', algorithmNode);
  if (rate < 1 || rate > MAX_TOKEN_RATE)
    throw new EnvoyConfigProblem(
      `sluice.algorithm token-bucket needs requests_per_unit from 1 to ${MAX_TOKEN_RATE} (a ${unit.toLowerCase()}'s refill)`,
      node,
    );
  if (burstNode === undefined) return rate;
  const burst = uint32Field(burstNode);
  if (burst < 1) throw new EnvoyConfigProblem('sluice.burst must be at least 1', burstNode);
  return burst;
}

function metadataOf(node: Node | null | undefined): Record<string, unknown> | undefined {
  if (node === undefined || node === null || isNull(node)) return undefined;
  if (!isMap(node)) throw unmarshal(node, 'map[string]interface {}');
  const data = node.toJSON() as Record<string, unknown>;
  return Object.keys(data).length === 0 ? undefined : data;
}

/** The value of `key` in a mapping (undefined when it is not there). */
function valueOf(map: YAMLMap, key: string): Node | null | undefined {
  const pair = (map.items as Pair[]).find((p) => isScalar(p.key) && p.key.value === key);
  return pair === undefined ? undefined : (pair.value as Node | null);
}

function isNull(node: Node): boolean {
  return isScalar(node) && node.value === null;
}

/** A string field: a scalar as written (a number or boolean reads as its text), empty when absent. */
function stringField(node: Node | null | undefined): string {
  if (node === undefined || node === null || isNull(node)) return '';
  if (!isScalar(node)) throw unmarshal(node, 'string');
  return typeof node.value === 'string' ? node.value : sourceOf(node as Scalar);
}

function boolField(node: Node | null | undefined): boolean {
  if (node === undefined || node === null || isNull(node)) return false;
  if (!isScalar(node) || typeof node.value !== 'boolean') throw unmarshal(node, 'bool');
  return node.value;
}

function uint32Field(node: Node | null | undefined): number {
  if (node === undefined || node === null || isNull(node)) return 0;
  const v = isScalar(node) ? node.value : undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffff_ffff)
    throw unmarshal(node, 'uint32');
  return v;
}

/** What upstream's YAML decoder says of a value of the wrong type. */
function unmarshal(node: Node, type: string): EnvoyConfigProblem {
  const tag = isMap(node) ? '!!map' : isSeq(node) ? '!!seq' : scalarTag(node as Scalar);
  return new EnvoyConfigProblem(
    `error loading config file: yaml: unmarshal errors: cannot unmarshal ${tag} into ${type}`,
    node,
  );
}

function scalarTag(node: Scalar): string {
  switch (typeof node.value) {
    case 'number':
      return Number.isInteger(node.value) ? '!!int' : '!!float';
    case 'boolean':
      return '!!bool';
    default:
      return '!!str';
  }
}
