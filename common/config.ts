import os from 'node:os'
import { z } from 'zod'

/**
 * The one configuration object of a process, read once from the environment and command-line
 * flags (flags win). Every knob of the product is here and documented in README.md.
 */
/** The projection's largest batch unless CDP_PROJECTION_BATCH_SIZE says otherwise. */
export const PROJECTION_BATCH_SIZE = 50_000
/** The feature consumer's largest batch unless CDP_FEATURES_BATCH_SIZE says otherwise. */
export const FEATURES_BATCH_SIZE = 20_000

/** Deployable roles. `features` also runs the raw projection pipeline (orders and customers → ClickHouse). */
export const ROLES = ['api', 'features', 'audience-sync', 'connectors'] as const
export type Role = (typeof ROLES)[number]

const csv = z
  .string()
  .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')])

export const ConfigSchema = z
  .object({
    nodeEnv: z.enum(['development', 'production', 'test']).default('development'),
    /** embedded: one process, on-disk event log and chdb. distributed: Kafka, a schema registry, a ClickHouse server. */
    runtime: z.enum(['embedded', 'distributed']).default('embedded'),
    roles: csv.pipe(z.array(z.enum(ROLES)).min(1)).default([...ROLES]),
    dataDir: z.string().default('./data'),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** auto: readable lines on a terminal, JSON lines otherwise (common/logger.ts). */
    logFormat: z.enum(['auto', 'json', 'pretty']).default('auto'),
    apiPort: z.coerce.number().int().min(0).max(65535).default(8080),
    apiHost: z.string().default('127.0.0.1'),
    /** Health and metrics port of roles that run without the API. */
    metricsPort: z.coerce.number().int().min(0).max(65535).default(9464),
    partitions: z.coerce.number().int().min(1).max(256).default(4),
    kafkaBrokers: csv.pipe(z.array(z.string().min(1))).optional(),
    kafkaClientId: z.string().default('cdp'),
    /**
     * How long the broker waits for a consumer's heartbeat before it gives the consumer's
     * partitions to the others of its group (a crashed or frozen process): the longest a
     * rebalance after a crash waits. Within the broker's group.min/max.session.timeout.ms.
     */
    kafkaSessionTimeoutMs: z.coerce.number().int().min(6_000).max(300_000).default(30_000),
    /** Prepended to every consumer group id, so several deployments (or test runs) can share a cluster. */
    consumerGroupPrefix: z.string().regex(/^[A-Za-z0-9._-]*$/).default(''),
    schemaRegistryUrl: z.url().optional(),
    schemaRegistryUsername: z.string().optional(),
    schemaRegistryPassword: z.string().optional(),
    /** How long one request to the schema registry may take (mappersmith's timeout); past it the batch that needed the schema fails and comes again after a pause. */
    schemaRegistryTimeoutMs: z.coerce.number().int().min(100).max(300_000).default(10_000),
    clickhouseUrl: z.url().optional(),
    clickhouseUsername: z.string().default('default'),
    clickhousePassword: z.string().default(''),
    clickhouseDatabase: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).default('cdp'),
    /** chdb: the nice value (0–19) of its merge threads; unset: the store's default, 10 (common/store/clickhouse.ts, MERGE_THREADS_NICE). A ClickHouse server has its own `os_threads_nice_value_merge_mutate`. */
    chdbMergeNice: z.coerce.number().int().min(0).max(19).optional(),
    /** Largest batch a consumer hands to its sink, and the longest it waits to fill one. */
    batchSize: z.coerce.number().int().min(1).max(100_000).default(5000),
    batchMaxWaitMs: z.coerce.number().int().min(1).max(60_000).default(200),
    /**
     * Largest batch of the projection (the raw tables' writer): its inserts follow ClickHouse's
     * advice of 10,000–100,000 rows each, as fewer, larger parts leave less to merge
     * (docs/analytics-performance.md, "Ingest").
     */
    projectionBatchSize: z.coerce.number().int().min(1).max(100_000).default(PROJECTION_BATCH_SIZE),
    /**
     * Largest batch of the feature consumer: a customer with several events in a batch is scored,
     * published and stored once, and its inserts are larger (docs/analytics-performance.md, "Streaming").
     */
    featuresBatchSize: z.coerce.number().int().min(1).max(100_000).default(FEATURES_BATCH_SIZE),
    demo: bool.default(false),
    /** How often the feature role rescores quiet customers, refreshes quintiles and snapshots segments (ms). */
    featuresTickMs: z.coerce.number().int().min(100).max(86_400_000).default(60_000),
    /** Tick as soon as the feature role has caught up during its first interval (docs/features.md, "Time"); the demo turns it on. */
    featuresCatchUpTicks: bool.default(false),
    /** How often the identity resolver looks for tenants whose customers changed (docs/identity.md). */
    identityIntervalMs: z.coerce.number().int().min(100).max(86_400_000).default(5_000),
    /** Transaction model of the CLV: MBG/NBD (one-time buyers can be inactive) or BG/NBD. */
    clvModel: z.enum(['mbgnbd', 'bgnbd']).default('mbgnbd'),
    clvHorizonMonths: z.coerce.number().int().min(1).max(120).default(12),
    /** Monthly discount rate of the CLV; 0.01 a month is about 12.7 % a year. */
    clvMonthlyDiscountRate: z.coerce.number().min(0).max(1).default(0.01),
    /** A tenant's CLV model is refitted when older than this (ms), and on every processing run. */
    clvRefitIntervalMs: z.coerce.number().int().min(1000).default(3_600_000),
    /** Keyring for secrets at rest: `id:<64 hex>[,id:<64 hex>…]`, the first encrypts (common/secrets.ts). Required in production. */
    secretsKeys: z.string().min(1).optional(),
    /** Admin bearer token (all tenants). Required in production; development generates one (docs/auth.md). */
    adminToken: z.string().min(16).optional(),
    /** Analytics endpoints: requests per minute per API key (spec: 100). */
    /**
     * API processes serving the same clients behind one balancer: each enforces 1/N of every rate
     * limit, so together they allow the configured limit (docs/auth.md, "Several API replicas").
     */
    apiReplicas: z.coerce.number().int().min(1).max(1000).default(1),
    rateLimitAnalyticsPerMinute: z.coerce.number().int().min(1).default(100),
    /** Demographics-related endpoints: requests per 15 minutes per IP (spec: 1,000 in production, 10,000 otherwise). */
    rateLimitDemographicsPer15Min: z.coerce.number().int().min(1).optional(),
    /** Processing, integration and audience-sync endpoints: requests per minute per API key (ours; the spec shows none). */
    rateLimitOperationsPerMinute: z.coerce.number().int().min(1).default(120),
    /** Of those, processing runs, syncs, credential checks and connection tests per minute per API key. */
    rateLimitJobsPerMinute: z.coerce.number().int().min(1).default(20),
    /** How often the API checks for tenants whose analytics summary is stale (ms); 0 turns summaries off (docs/analytics-performance.md). */
    analyticsSummaryIntervalMs: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
    /** Keep each tenant's customer columns with its summary, so filtered answers are computed in memory (docs/analytics-performance.md, "Filtered answers"); about 300 MB per million customers with ten million orders. */
    analyticsColumns: bool.default(true),
    /** Worker threads computing the analytics answers drawn from the customer columns (docs/analytics-performance.md, "Worker threads"); 0 computes them on the thread serving HTTP. Default: one per core, at most 4. */
    analyticsWorkers: z.coerce.number().int().min(0).max(64).default(Math.min(4, os.availableParallelism())),
    /** How long a console sign-in lasts (services/api/session.ts), in hours. */
    consoleSessionHours: z.coerce.number().min(0.05).max(24 * 30).default(8),
    /** The session cookie's Secure attribute: true or false; unset: as the request came (HTTPS, or a trusted proxy's X-Forwarded-Proto). */
    consoleSecureCookie: bool.optional(),
    /** Express's `trust proxy` (docs/auth.md): which proxy's X-Forwarded-For/-Proto to believe, for the client IP of the rate limits and HTTPS of the session cookie: `true`, a hop count, or addresses/subnets (`loopback`, `10.0.0.0/8`). Unset: none. */
    trustProxy: z.string().trim().min(1).optional(),
    /** A directory of fuller demographic reference data (localities, first names, aliases, postal codes) loaded over the shipped tables (docs/demographics.md). */
    demographicsReferenceDir: z.string().min(1).optional(),
    /** The social-ads platform (audience sync): base URL (the version path is appended), version, application token of /debug_token. */
    adsApiBaseUrl: z.url().optional(),
    adsApiVersion: z.string().regex(/^v\d+\.\d+$/).default('v18.0'),
    adsAppAccessToken: z.string().min(1).optional(),
    /** The platform app's secret (X-Hub-Signature-256 of its webhooks) and the subscription handshake's verify token. */
    adsAppSecret: z.string().min(8).optional(),
    adsWebhookVerifyToken: z.string().min(8).optional(),
    /** Audience sync: a customer's segment change is uploaded once it is this old (coalescing window). */
    audienceSyncWindowMs: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
    /** Wait between two upload batches (spec: about 2 s). */
    audienceSyncPacingMs: z.coerce.number().int().min(0).max(60_000).default(2_000),
    /** How often audience size and delivery status are read (each read counts against 200 per hour and token). */
    audienceStatusIntervalMs: z.coerce.number().int().min(1000).default(900_000),
    /** Connectors: base URLs of the external systems (or their simulators; docs/integrations.md). The commerce platform's may hold {account_name} and {environment}. */
    connectorsCommercePlatformUrl: z.string().min(1).default('http://127.0.0.1:8091'),
    connectorsMarketplaceUrl: z.url().default('http://127.0.0.1:8092'),
    connectorsSearchAdsUrl: z.url().default('http://127.0.0.1:8093'),
    /** The social-ads platform as the connectors validate it; default CDP_ADS_API_BASE_URL, else the simulator's port. */
    connectorsSocialAdsUrl: z.url().optional(),
    connectorsPollMs: z.coerce.number().int().min(100).default(5_000),
    connectorsSyncTimeoutMs: z.coerce.number().int().min(1000).default(600_000),
    /** Signs sync notifications of integrations that set no webhook secret of their own. */
    connectorsWebhookSecret: z.string().min(8).optional(),
    /** Sync notifications may go to private, loopback or link-local addresses (default: yes in development, no in production). */
    connectorsAllowPrivateWebhooks: bool.optional(),
    /** SMTP server for sync e-mails: smtp://user:password@host:587 or smtps://…:465 (a secret: it carries the credentials). */
    smtpUrl: z.url({ protocol: /^smtps?$/ }).optional(),
    /** Sender of the sync e-mails. */
    smtpFrom: z.string().min(3).default('CDP <cdp@localhost>'),
    /** Entries per tenant of the analytics response cache; 0 turns it off (e.g. to measure computed answers). */
    analyticsCacheEntries: z.coerce.number().int().min(0).max(100_000).default(500),
  })
  .superRefine((c, ctx) => {
    if (c.runtime === 'distributed') {
      if (!c.kafkaBrokers?.length) ctx.addIssue({ code: 'custom', path: ['kafkaBrokers'], message: 'KAFKA_BROKERS is required when CDP_RUNTIME=distributed' })
      if (!c.schemaRegistryUrl) ctx.addIssue({ code: 'custom', path: ['schemaRegistryUrl'], message: 'SCHEMA_REGISTRY_URL is required when CDP_RUNTIME=distributed' })
    }
  })

export type Config = z.infer<typeof ConfigSchema>

/** Environment variable behind each config key. */
export const ENV_NAMES: Record<keyof z.input<typeof ConfigSchema>, string> = {
  nodeEnv: 'NODE_ENV',
  runtime: 'CDP_RUNTIME',
  roles: 'CDP_ROLES',
  dataDir: 'CDP_DATA_DIR',
  logLevel: 'LOG_LEVEL',
  logFormat: 'CDP_LOG_FORMAT',
  apiPort: 'CDP_API_PORT',
  apiHost: 'CDP_API_HOST',
  metricsPort: 'CDP_METRICS_PORT',
  partitions: 'CDP_PARTITIONS',
  kafkaBrokers: 'KAFKA_BROKERS',
  kafkaClientId: 'KAFKA_CLIENT_ID',
  kafkaSessionTimeoutMs: 'CDP_KAFKA_SESSION_TIMEOUT_MS',
  consumerGroupPrefix: 'CDP_CONSUMER_GROUP_PREFIX',
  schemaRegistryUrl: 'SCHEMA_REGISTRY_URL',
  schemaRegistryUsername: 'SCHEMA_REGISTRY_USERNAME',
  schemaRegistryPassword: 'SCHEMA_REGISTRY_PASSWORD',
  schemaRegistryTimeoutMs: 'SCHEMA_REGISTRY_TIMEOUT_MS',
  clickhouseUrl: 'CLICKHOUSE_URL',
  clickhouseUsername: 'CLICKHOUSE_USERNAME',
  clickhousePassword: 'CLICKHOUSE_PASSWORD',
  clickhouseDatabase: 'CLICKHOUSE_DATABASE',
  chdbMergeNice: 'CDP_CHDB_MERGE_NICE',
  batchSize: 'CDP_BATCH_SIZE',
  batchMaxWaitMs: 'CDP_BATCH_MAX_WAIT_MS',
  projectionBatchSize: 'CDP_PROJECTION_BATCH_SIZE',
  featuresBatchSize: 'CDP_FEATURES_BATCH_SIZE',
  demo: 'CDP_DEMO',
  featuresTickMs: 'CDP_FEATURES_TICK_MS',
  featuresCatchUpTicks: 'CDP_FEATURES_CATCH_UP_TICKS',
  identityIntervalMs: 'CDP_IDENTITY_INTERVAL_MS',
  clvModel: 'CDP_CLV_MODEL',
  clvHorizonMonths: 'CDP_CLV_HORIZON_MONTHS',
  clvMonthlyDiscountRate: 'CDP_CLV_MONTHLY_DISCOUNT_RATE',
  clvRefitIntervalMs: 'CDP_CLV_REFIT_INTERVAL_MS',
  adminToken: 'CDP_ADMIN_TOKEN',
  secretsKeys: 'CDP_SECRETS_KEYS',
  apiReplicas: 'CDP_API_REPLICAS',
  rateLimitAnalyticsPerMinute: 'CDP_RATE_LIMIT_ANALYTICS_PER_MINUTE',
  rateLimitDemographicsPer15Min: 'CDP_RATE_LIMIT_DEMOGRAPHICS_PER_15MIN',
  rateLimitOperationsPerMinute: 'CDP_RATE_LIMIT_OPERATIONS_PER_MINUTE',
  rateLimitJobsPerMinute: 'CDP_RATE_LIMIT_JOBS_PER_MINUTE',
  analyticsSummaryIntervalMs: 'CDP_ANALYTICS_SUMMARY_INTERVAL_MS',
  analyticsColumns: 'CDP_ANALYTICS_COLUMNS',
  analyticsWorkers: 'CDP_ANALYTICS_WORKERS',
  consoleSessionHours: 'CDP_CONSOLE_SESSION_HOURS',
  consoleSecureCookie: 'CDP_CONSOLE_SECURE_COOKIE',
  trustProxy: 'CDP_TRUST_PROXY',
  analyticsCacheEntries: 'CDP_ANALYTICS_CACHE_ENTRIES',
  connectorsCommercePlatformUrl: 'CDP_CONNECTORS_COMMERCE_PLATFORM_URL',
  connectorsMarketplaceUrl: 'CDP_CONNECTORS_MARKETPLACE_URL',
  connectorsSearchAdsUrl: 'CDP_CONNECTORS_SEARCH_ADS_URL',
  connectorsSocialAdsUrl: 'CDP_CONNECTORS_SOCIAL_ADS_URL',
  connectorsPollMs: 'CDP_CONNECTORS_POLL_MS',
  connectorsSyncTimeoutMs: 'CDP_CONNECTORS_SYNC_TIMEOUT_MS',
  connectorsWebhookSecret: 'CDP_CONNECTORS_WEBHOOK_SECRET',
  connectorsAllowPrivateWebhooks: 'CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS',
  smtpUrl: 'CDP_SMTP_URL',
  smtpFrom: 'CDP_SMTP_FROM',
  demographicsReferenceDir: 'CDP_DEMOGRAPHICS_REFERENCE_DIR',
  adsApiBaseUrl: 'CDP_ADS_API_BASE_URL',
  adsApiVersion: 'CDP_ADS_API_VERSION',
  adsAppAccessToken: 'CDP_ADS_APP_ACCESS_TOKEN',
  adsAppSecret: 'CDP_ADS_APP_SECRET',
  adsWebhookVerifyToken: 'CDP_ADS_WEBHOOK_VERIFY_TOKEN',
  audienceSyncWindowMs: 'CDP_AUDIENCE_SYNC_WINDOW_MS',
  audienceSyncPacingMs: 'CDP_AUDIENCE_SYNC_PACING_MS',
  audienceStatusIntervalMs: 'CDP_AUDIENCE_STATUS_INTERVAL_MS',
}

/** Config keys whose values are secrets: never logged, never returned. */
export const SECRET_KEYS = ['schemaRegistryPassword', 'clickhousePassword', 'adminToken', 'secretsKeys', 'adsAppAccessToken', 'adsAppSecret', 'adsWebhookVerifyToken', 'connectorsWebhookSecret', 'smtpUrl'] as const

export class ConfigError extends Error {
  constructor(public readonly issues: { path: string; message: string }[]) {
    super(`invalid configuration: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
}

/** Reads the config once: environment first, then flags (camelCase keys) on top. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, flags: Record<string, unknown> = {}): Config {
  const raw: Record<string, unknown> = {}
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const v = env[name]
    if (v !== undefined && v !== '') raw[key] = v
  }
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) raw[k] = v
  const parsed = ConfigSchema.safeParse(raw)
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => {
        const key = String(i.path[0] ?? '')
        const envName = ENV_NAMES[key as keyof typeof ENV_NAMES]
        return { path: envName ? `${key} (${envName})` : key, message: i.message }
      }),
    )
  }
  return parsed.data
}

/** The config as it may be shown: secrets masked. */
export function redactConfig(c: Config): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c }
  for (const k of SECRET_KEYS) if (out[k]) out[k] = '***'
  if (typeof out.clickhouseUrl === 'string') out.clickhouseUrl = maskUrlPassword(out.clickhouseUrl)
  if (typeof out.schemaRegistryUrl === 'string') out.schemaRegistryUrl = maskUrlPassword(out.schemaRegistryUrl)
  return out
}

export function maskUrlPassword(u: string): string {
  try {
    const url = new URL(u)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return u
  }
}
