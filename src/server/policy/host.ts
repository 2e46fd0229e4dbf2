import { domainToASCII } from 'node:url';

/** A port after the host: `:` and digits, possibly none (`example.com:` is the default port). */
const portSuffix = /:\d*$/;
const portOnly = /^:\d*$/;
/**
 * Already in the one spelling: lower-case ASCII labels, the last one starting with a letter (a
 * name ending in a number or `0x…` is an IPv4 address, which the URL parser rewrites).
 */
const plainName = /^(?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*$/;

/**
 * The one spelling of a host that `host` rules and keys compare: any port dropped, one trailing
 * dot dropped (`api.example.com.` is the same fully qualified name), lower case, and an
 * internationalized name in its ASCII (IDNA) form, as the WHATWG URL parser writes it. Without
 * this, `api.example.com.:443` reached the application that `api.example.com` names, unlimited.
 *
 * @returns undefined for a value that is no host at all (a space, an unclosed `[`, two trailing
 *   dots): nothing can say which site it names, so no rule may be skipped on its account.
 * @example
 * normalizeHost('API.Example.com.:443') // 'api.example.com'
 * normalizeHost('[::1]:8080') // '[::1]'
 */
export function normalizeHost(host: string): string | undefined {
  let name = host;
  if (name.startsWith('[')) {
    // An IPv6 literal: its own colons are inside the brackets.
    const close = name.indexOf(']');
    if (close === -1) return undefined;
    const rest = name.slice(close + 1);
    if (rest !== '' && !portOnly.test(rest)) return undefined;
    name = name.slice(0, close + 1);
  } else {
    name = name.replace(portSuffix, '');
  }
  if (name.endsWith('.')) name = name.slice(0, -1);
  // Punycode labels (`xn--`) are checked by the parser like any other non-plain name.
  if (plainName.test(name) && !name.includes('xn--')) return name;
  const ascii = domainToASCII(name);
  return ascii === '' || ascii.endsWith('.') ? undefined : ascii;
}
