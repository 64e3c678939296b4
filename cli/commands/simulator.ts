import { randomBytes } from 'node:crypto'
import { createLogger, type Logger } from '../../common/logger.ts'
import { UsageError, parse } from '../args.ts'

/**
 * `cdp simulator <name>`: starts one third-party platform simulator alone, logs its URL and serves
 * until SIGINT/SIGTERM. Each simulator is one row of SIMULATORS: its summary and a `serve` that
 * parses its own flags, starts it and returns how to stop it. Simulator code is loaded on demand.
 */
interface Served {
  url: string
  close(): Promise<void>
}

interface SimulatorEntry {
  summary: string
  serve(argv: string[], logger: Logger): Promise<Served | 'help'>
}

const SIMULATORS: Record<string, SimulatorEntry> = {
  'ads-platform': { summary: 'the social-ads platform (custom audiences, docs/audience-sync.md)', serve: serveAdsPlatform },
  'commerce-platform': { summary: 'the commerce platform (orders, customers, products; docs/integrations.md)', serve: serveCommercePlatform },
  marketplace: { summary: 'the marketplace (OAuth, orders, buyers; docs/integrations.md)', serve: serveMarketplace },
  'search-ads': { summary: 'the search-ads platform (developer token, conversions; docs/integrations.md)', serve: serveSearchAds },
}

const USAGE = `usage: cdp simulator <name> [options]   (cdp simulator <name> --help for its options)

${Object.entries(SIMULATORS)
  .map(([name, s]) => `  ${name.padEnd(18)}${s.summary}`)
  .join('\n')}
`

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (!name || name === '--help' || name === '-h') {
    process.stdout.write(USAGE)
    return name ? 0 : 2
  }
  const entry = SIMULATORS[name]
  if (!entry) throw new UsageError(`unknown simulator '${name}'\n\n${USAGE}`)
  const logger = createLogger({ name: `simulator:${name}` })
  const served = await entry.serve(rest, logger)
  if (served === 'help') return 0
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'stopping')
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      served.close().finally(resolve)
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  return 0
}

// ---- ads-platform ------------------------------------------------------------------------------

const ADS_FLAGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  'seed-token': { type: 'string', multiple: true },
  scopes: { type: 'string' },
  'ad-account': { type: 'string', multiple: true },
  'app-id': { type: 'string' },
  'app-secret': { type: 'string' },
  'webhook-url': { type: 'string' },
  'verify-token': { type: 'string' },
  'fault-429': { type: 'string' },
  'fault-500': { type: 'string' },
  latency: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
} as const

const ADS_USAGE = `usage: cdp simulator ads-platform [--port N] [--host H] [--seed-token TOKEN ...] [--scopes a,b,c]
                                  [--ad-account act_N ...] [--app-id ID] [--app-secret S]
                                  [--webhook-url URL] [--verify-token T]
                                  [--fault-429 SHARE] [--fault-500 SHARE] [--latency MS] [--quiet]

Serves the ads platform's API under http://HOST:PORT/v18.0/ and admin endpoints under /_sim/
(services/simulators/ads-platform/README.md).
  --port N            default 8089 (0: a free port)
  --seed-token T      a token to accept (repeatable); without one, a random token is made and logged
  --scopes a,b,c      scopes of the seed tokens (default ads_management,ads_read,business_management)
  --ad-account act_N  an ad account to create (repeatable; default act_1000000001)
  --app-secret S      signs webhook events; /debug_token wants access_token=<app id>|<app secret>
  --webhook-url URL   where signed delivery-status events are POSTed
  --fault-429 SHARE, --fault-500 SHARE   answer that share (0..1) of API requests with the fault
  --latency MS        added to every API request
  --quiet             do not log each request
`

function share(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!(n >= 0 && n <= 1)) throw new UsageError(`--${name} must be a number between 0 and 1, got '${v}'`)
  return n
}

function nonNegativeInt(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`--${name} must be an integer >= 0, got '${v}'`)
  return n
}

async function serveAdsPlatform(argv: string[], logger: Logger): Promise<Served | 'help'> {
  const { values, positionals } = parse(argv, ADS_FLAGS)
  if (values.help) {
    process.stdout.write(ADS_USAGE)
    return 'help'
  }
  if (positionals.length) throw new UsageError(`unexpected arguments '${positionals.join(' ')}'\n\n${ADS_USAGE}`)
  const port = nonNegativeInt(values.port, 'port') ?? 8089
  if (port > 65535) throw new UsageError(`--port must be <= 65535`)
  const adAccounts = values['ad-account'] ?? ['act_1000000001']
  for (const a of adAccounts) if (!/^act_\d+$/.test(a)) throw new UsageError(`--ad-account must have the form act_<number>, got '${a}'`)
  const scopes = values.scopes?.split(',').map((s) => s.trim()).filter(Boolean)
  const seedTokens = values['seed-token'] ?? [`EAASIM${randomBytes(16).toString('hex')}`]
  const faults = { rate429: share(values['fault-429'], 'fault-429'), rate500: share(values['fault-500'], 'fault-500'), latencyMs: nonNegativeInt(values.latency, 'latency') }
  if ((faults.rate429 ?? 0) + (faults.rate500 ?? 0) > 1) throw new UsageError('--fault-429 + --fault-500 must be <= 1')

  const { start } = await import('../../services/simulators/ads-platform/index.ts')
  const sim = await start({
    port,
    host: values.host ?? '127.0.0.1',
    appId: values['app-id'],
    appSecret: values['app-secret'],
    tokens: seedTokens.map((token) => ({ token, scopes })),
    adAccounts,
    webhookUrl: values['webhook-url'] ?? null,
    webhookVerifyToken: values['verify-token'],
    faults: Object.fromEntries(Object.entries(faults).filter(([, v]) => v !== undefined)),
    onRequest: values.quiet ? undefined : (e) => logger.info({ method: e.method, path: e.path, status: e.status, error_code: e.errorCode, rows: e.rows, fault: e.fault, ms: e.durationMs }, 'request'),
  })
  // Simulator tokens are throwaway test values; they are logged on purpose so a demo can use them.
  logger.info(
    { url: sim.url, api_url: sim.apiUrl, version: sim.version, seed_tokens: seedTokens, ad_accounts: adAccounts, app_id: sim.state.opts.appId, webhook_url: sim.state.webhook.url, admin: `${sim.url}/_sim/state` },
    'ads platform simulator listening',
  )
  return sim
}

// ---- commerce-platform, marketplace, search-ads ----------------------------------------------------

/** Flags every shop simulator takes. */
const SHOP_FLAGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  customers: { type: 'string' },
  seed: { type: 'string' },
  'fault-429': { type: 'string' },
  'fault-500': { type: 'string' },
  latency: { type: 'string' },
  'rate-limit': { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
} as const

const SHOP_USAGE = `  --port N                 0: a free port
  --customers N            shop size (synthetic generator; the last year of orders)
  --seed S                 generator seed (same seed, same data)
  --fault-429 SHARE, --fault-500 SHARE   answer that share (0..1) of API requests with the fault
  --latency MS             added to every API request
  --rate-limit N           requests per minute per caller before 429 with Retry-After
  --quiet                  do not log each request
`

function shopOptions(values: Record<string, unknown>, defaultPort: number) {
  const port = nonNegativeInt(values.port as string | undefined, 'port') ?? defaultPort
  if (port > 65535) throw new UsageError('--port must be <= 65535')
  const faults = { rate429: share(values['fault-429'] as string | undefined, 'fault-429'), rate500: share(values['fault-500'] as string | undefined, 'fault-500'), latencyMs: nonNegativeInt(values.latency as string | undefined, 'latency') }
  if ((faults.rate429 ?? 0) + (faults.rate500 ?? 0) > 1) throw new UsageError('--fault-429 + --fault-500 must be <= 1')
  const rate = nonNegativeInt(values['rate-limit'] as string | undefined, 'rate-limit')
  return {
    port,
    host: (values.host as string | undefined) ?? '127.0.0.1',
    customers: nonNegativeInt(values.customers as string | undefined, 'customers'),
    seed: values.seed as string | undefined,
    faults: Object.fromEntries(Object.entries(faults).filter(([, v]) => v !== undefined)),
    ...(rate ? { rateLimit: { requests: rate, windowMs: 60_000 } } : {}),
  }
}

/** The commerce-platform and marketplace simulators can serve the two sides of one population. */
const OVERLAP_FLAG = { overlap: { type: 'string' } } as const

const OVERLAP_USAGE = `  --overlap SHARE          serve one side of a population shared with the other simulator
                           (commerce-platform: every person; marketplace: the SHARE (0..1) of
                           people who also buy there, identifiers spelled otherwise, with the
                           orders placed there); start both with the same --customers, --seed
                           and --overlap (then default 200 and shared-population). GET
                           /_sim/truth answers the person behind each customer. Default off
`

const overlapOption = (values: Record<string, unknown>) => {
  const overlap = share(values.overlap as string | undefined, 'overlap')
  return overlap === undefined ? {} : { overlap }
}

const requestLogger = (logger: Logger, quiet: unknown) =>
  quiet ? undefined : (e: { method: string; path: string; status: number; error: string | null; caller: string | null; durationMs: number }) =>
    logger.info({ method: e.method, path: e.path, status: e.status, error: e.error, caller: e.caller, ms: e.durationMs }, 'request')

async function serveCommercePlatform(argv: string[], logger: Logger): Promise<Served | 'help'> {
  const flags = { ...SHOP_FLAGS, ...OVERLAP_FLAG, account: { type: 'string' }, environment: { type: 'string' }, 'app-key': { type: 'string' }, 'app-token': { type: 'string' } } as const
  const { values, positionals } = parse(argv, flags)
  const usage = `usage: cdp simulator commerce-platform [--account NAME] [--environment ENV] [--app-key K --app-token T] [options]

Serves the commerce platform's API under http://HOST:PORT/{account}/{environment}/api/ and admin
endpoints under /_sim/ (services/simulators/commerce-platform/README.md).
  --account NAME           default demoshop
  --environment ENV        default commerce_stable
  --app-key K --app-token T   credentials to accept (default appkey-demoshop-SIM0001 and its token)
  (default port 8091)
${SHOP_USAGE}${OVERLAP_USAGE}`
  if (values.help) {
    process.stdout.write(usage)
    return 'help'
  }
  if (positionals.length) throw new UsageError(`unexpected arguments '${positionals.join(' ')}'\n\n${usage}`)
  const { start, DEFAULTS } = await import('../../services/simulators/commerce-platform/index.ts')
  const account = values.account ?? DEFAULTS.accountName
  const appKey = values['app-key'] ?? (account === DEFAULTS.accountName ? DEFAULTS.appKey : `appkey-${account}-SIM0001`)
  const appToken = values['app-token'] ?? DEFAULTS.appToken
  const sim = await start({
    ...shopOptions(values, 8091),
    ...overlapOption(values),
    accountName: account,
    environments: [values.environment ?? DEFAULTS.environment],
    appKeys: [{ appKey, appToken }],
    onRequest: requestLogger(logger, values.quiet),
  })
  // Simulator credentials are throwaway test values, logged on purpose so a demo can use them.
  logger.info({ url: sim.url, api: `${sim.url}/${sim.accountName}/${sim.environment}/api`, account_name: sim.accountName, environment: sim.environment, app_key: appKey, app_token_for_demo: appToken, orders: sim.state.data.orders.length, customers: sim.state.data.customers.length, overlap: values.overlap ?? null, admin: `${sim.url}/_sim/state` }, 'commerce platform simulator listening')
  return sim
}

async function serveMarketplace(argv: string[], logger: Logger): Promise<Served | 'help'> {
  const flags = { ...SHOP_FLAGS, ...OVERLAP_FLAG, 'client-id': { type: 'string' }, 'client-secret': { type: 'string' }, 'redirect-uri': { type: 'string' }, 'token-ttl': { type: 'string' } } as const
  const { values, positionals } = parse(argv, flags)
  const usage = `usage: cdp simulator marketplace [--client-id ID --client-secret S --redirect-uri URL] [--token-ttl SECONDS] [options]

Serves the marketplace's OAuth token endpoint (/oauth/token), /users/me, /orders/search and
/customers/search, admin endpoints under /_sim/ (services/simulators/marketplace/README.md).
  --client-id, --client-secret, --redirect-uri   the registered application (defaults in the README)
  --token-ttl SECONDS      access-token lifetime (default 21600)
  (default port 8092)
${SHOP_USAGE}${OVERLAP_USAGE}`
  if (values.help) {
    process.stdout.write(usage)
    return 'help'
  }
  if (positionals.length) throw new UsageError(`unexpected arguments '${positionals.join(' ')}'\n\n${usage}`)
  const { start, DEFAULTS } = await import('../../services/simulators/marketplace/index.ts')
  const client = { clientId: values['client-id'] ?? DEFAULTS.clientId, clientSecret: values['client-secret'] ?? DEFAULTS.clientSecret, redirectUri: values['redirect-uri'] ?? DEFAULTS.redirectUri }
  const ttl = nonNegativeInt(values['token-ttl'], 'token-ttl')
  const sim = await start({ ...shopOptions(values, 8092), ...overlapOption(values), clients: [client], ...(ttl ? { tokenTtlMs: ttl * 1000 } : {}), onRequest: requestLogger(logger, values.quiet) })
  logger.info({ url: sim.url, client_id: client.clientId, client_secret_for_demo: client.clientSecret, redirect_uri: client.redirectUri, seller: sim.state.opts.seller, orders: sim.state.data.orders.length, buyers: sim.state.data.customers.length, overlap: values.overlap ?? null, admin: `${sim.url}/_sim/state` }, 'marketplace simulator listening')
  return sim
}

async function serveSearchAds(argv: string[], logger: Logger): Promise<Served | 'help'> {
  const flags = { ...SHOP_FLAGS, 'developer-token': { type: 'string' }, 'refresh-token': { type: 'string' }, 'customer-id': { type: 'string', multiple: true } } as const
  const { values, positionals } = parse(argv, flags)
  const usage = `usage: cdp simulator search-ads [--developer-token T] [--refresh-token R] [--customer-id 123-456-7890 ...] [options]

Serves the search-ads OAuth token endpoint (/oauth2/token) and API under /v17/, admin endpoints
under /_sim/ (services/simulators/search-ads/README.md).
  --developer-token T, --refresh-token R   credentials to accept (defaults in the README)
  --customer-id ID         an ad account (repeatable; default 1234567890)
  (default port 8093)
${SHOP_USAGE}`
  if (values.help) {
    process.stdout.write(usage)
    return 'help'
  }
  if (positionals.length) throw new UsageError(`unexpected arguments '${positionals.join(' ')}'\n\n${usage}`)
  const { start, DEFAULTS } = await import('../../services/simulators/search-ads/index.ts')
  const developerToken = values['developer-token'] ?? DEFAULTS.developerToken
  const refreshToken = values['refresh-token'] ?? DEFAULTS.refreshToken
  const accounts = values['customer-id'] ?? [DEFAULTS.customerId]
  for (const a of accounts) if (!/^\d{3}-?\d{3}-?\d{4}$/.test(a)) throw new UsageError(`--customer-id must have 10 digits, got '${a}'`)
  const sim = await start({ ...shopOptions(values, 8093), developerTokens: [developerToken], refreshTokens: [refreshToken], accounts, onRequest: requestLogger(logger, values.quiet) })
  logger.info({ url: sim.url, version: sim.version, customer_ids: accounts, developer_token_for_demo: developerToken, refresh_token_for_demo: refreshToken, admin: `${sim.url}/_sim/state` }, 'search ads simulator listening')
  return sim
}
