/**
 * SSRF guard of the sync notifications: `webhook_url` is chosen by the tenant, so before a POST
 * its host is resolved and every address it resolves to must be a public one. Loopback, RFC 1918,
 * link-local (the cloud metadata service at 169.254.169.254), CGNAT, ULA, unspecified, multicast,
 * documentation and reserved ranges are refused, IPv4-mapped, SIIT, NAT64 and other
 * IPv4-embedding IPv6 forms included.
 * Development turns it off (`allowPrivateWebhooks`) to post to a local receiver.
 *
 * Residual risk, accepted: the address is checked, then fetch resolves the host again to connect
 * (DNS rebinding between the check and the connection). Redirects are not followed.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'

export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>

const defaultLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

/** [network, prefix length] of IPv4 ranges that are not public destinations. */
const V4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
]

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0)
}

function blockedV4(n: number): string | null {
  for (const [net, bits] of V4_BLOCKED) {
    const size = 2 ** (32 - bits)
    const base = v4ToInt(net)
    if (n >= base && n < base + size) return `${net}/${bits}`
  }
  return null
}

/** The 16 bytes of an IPv6 address (a trailing dotted quad and a zone id allowed). */
function v6Bytes(ip: string): number[] | null {
  let s = ip.split('%')[0]!
  const words: number[] = []
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)
  let tail: number[] = []
  if (quad) {
    const n = v4ToInt(quad[1]!)
    tail = [Math.floor(n / 65536), n % 65536]
    s = s.slice(0, -quad[1]!.length)
    if (s.endsWith(':') && !s.endsWith('::')) s = s.slice(0, -1)
  }
  const parseGroup = (g: string) => (g === '' ? [] : g.split(':').map((h) => parseInt(h, 16)))
  const dbl = s.indexOf('::')
  if (dbl >= 0) {
    const head = parseGroup(s.slice(0, dbl))
    const rest = parseGroup(s.slice(dbl + 2))
    const fill = 8 - head.length - rest.length - tail.length
    if (fill < 0) return null
    words.push(...head, ...new Array<number>(fill).fill(0), ...rest, ...tail)
  } else words.push(...parseGroup(s), ...tail)
  if (words.length !== 8 || words.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffff)) return null
  return words.flatMap((w) => [w >> 8, w & 0xff])
}

/** Why `ip` is not a public destination (the range it is in), or null when it is public. */
export function privateRange(ip: string): string | null {
  const kind = isIP(ip.split('%')[0]!)
  if (kind === 4) return blockedV4(v4ToInt(ip))
  if (kind !== 6) return 'not an IP address'
  const b = v6Bytes(ip)
  if (!b) return 'not an IP address'
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0)
  const v4At = (i: number) => ((b[i]! * 256 + b[i + 1]!) * 256 + b[i + 2]!) * 256 + b[i + 3]!
  if (zero(0, 16)) return '::/128 (unspecified)'
  if (zero(0, 15) && b[15] === 1) return '::1/128 (loopback)'
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96): judge the IPv4 inside.
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return blockedV4(v4At(12)) && `::ffff:${blockedV4(v4At(12))} (IPv4-mapped)`
  if (zero(0, 12)) return `::/96 (IPv4-compatible)`
  // SIIT (::ffff:0:a.b.c.d, RFC 2765) and local-use NAT64 (64:ff9b:1::/48, RFC 8215) carry an IPv4 address too: not public destinations.
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return '::ffff:0:0/96 (SIIT)'
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b[4] === 0x00 && b[5] === 0x01) return '64:ff9b:1::/48 (local-use NAT64)'
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return '2001:db8::/32 (documentation)'
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return blockedV4(v4At(12)) && `64:ff9b::/96 ${blockedV4(v4At(12))} (NAT64)`
  if (b[0] === 0x20 && b[1] === 0x02) return blockedV4(v4At(2)) && `2002::/16 ${blockedV4(v4At(2))} (6to4)`
  if ((b[0]! & 0xfe) === 0xfc) return 'fc00::/7 (unique local)'
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'fe80::/10 (link-local)'
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'fec0::/10 (site-local)'
  if (b[0] === 0xff) return 'ff00::/8 (multicast)'
  return null
}

/**
 * What can be told of a webhook URL without resolving it, at the moment it is configured: a host
 * that is an IP literal in a private or reserved range, or a `localhost` name (RFC 6761), is
 * refused at once. Other names are resolved at each notification (`checkWebhookDestination`),
 * since what a name resolves to can change.
 */
export function literalDestinationProblem(url: string): string | null {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return null // the body schema reports a malformed URL
  }
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '')
  if (host === 'localhost' || host.endsWith('.localhost')) return `the host ${host} is this machine; only public destinations are allowed`
  if (!isIP(host)) return null
  const range = privateRange(host)
  return range ? `the host ${host} is a private or reserved address (${range}); only public destinations are allowed` : null
}

export type DestinationCheck = { ok: true } | { ok: false; final: boolean; reason: string }

/**
 * Whether `url` may be posted to: an http(s) URL whose host resolves only to public addresses.
 * `final: false` marks a resolution failure (worth another attempt); a refusal is final.
 */
export async function checkWebhookDestination(url: string, lookup: LookupAll = defaultLookup): Promise<DestinationCheck> {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return { ok: false, final: true, reason: 'refused: the webhook_url is not a URL' }
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, final: true, reason: `refused: the webhook_url scheme ${u.protocol} is not http or https` }
  const host = u.hostname.replace(/^\[|\]$/g, '')
  let addresses: string[]
  try {
    addresses = isIP(host) ? [host] : (await lookup(host)).map((a) => a.address)
  } catch {
    return { ok: false, final: false, reason: `the webhook host ${host} could not be resolved` }
  }
  if (!addresses.length) return { ok: false, final: false, reason: `the webhook host ${host} could not be resolved` }
  for (const a of addresses) {
    const range = privateRange(a)
    if (range) return { ok: false, final: true, reason: `refused: the webhook host ${host} resolves to ${a}, a private or reserved address (${range}); only public destinations are allowed (CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS)` }
  }
  return { ok: true }
}
