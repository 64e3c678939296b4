-- Tenant integrations and their sync jobs (services/api/integrations, pipelines/connectors,
-- docs/integrations.md). Not projections of the event log: `cdp replay` leaves them alone.
-- Every table is a ReplacingMergeTree read with FINAL; writers insert a new version of a row
-- instead of updating it.

-- One row per integration. `credentials` is the JSON of an AES-256-GCM record (common/secrets.ts:
-- key_id, iv, tag, ciphertext in hex) sealing the JSON of the credential fields; `webhook_secret`
-- likewise, or '' when none. No other column holds a secret. `account_key` identifies the
-- external account (account name + environment, client id, customer id, app id) so a tenant
-- cannot connect the same account twice.
CREATE TABLE IF NOT EXISTS integrations
(
    integration_id     UInt64,
    tenant_id          UInt64,
    integration_type   LowCardinality(String),
    account_name       Nullable(String),
    environment        Nullable(String),
    account_key        String,
    is_active          UInt8,
    validation_status  LowCardinality(String),
    configuration      String,
    credentials        String,
    webhook_secret     String,
    created_at         DateTime64(3, 'UTC'),
    updated_at         DateTime64(3, 'UTC'),
    deleted_at         Nullable(DateTime64(3, 'UTC')),
    version            UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY integration_id;

-- Integration ids are small integers handed out by claims: a claimant inserts its claim for
-- max + 1 and keeps the id only if its claim is the only one for it (see store.ts).
CREATE TABLE IF NOT EXISTS integration_id_claims
(
    integration_id  UInt64,
    claim           String,
    claimed_at      DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (integration_id, claim);

-- The sync queue. One row per job (a POST .../sync, the initial sync, a scheduled run); every
-- state change writes the whole row again with a higher version: rank * 2^44 + a monotonic
-- counter, rank 1 while queued or running and 3 once final, so a final state is never undone by
-- a late write. `checkpoint` (JSON) holds the fixed window, the entity and page cursor reached and
-- the counters so far: a job killed halfway resumes from it. `scheduled_for` is the recurrence
-- occurrence a scheduled job serves (its sync_id is derived from it, so two runners scheduling
-- the same occurrence write the same row).
CREATE TABLE IF NOT EXISTS integration_sync_jobs
(
    integration_id  UInt64,
    sync_id         String,
    tenant_id       UInt64,
    kind            LowCardinality(String),          -- manual | initial | scheduled
    sync_type       LowCardinality(String),          -- full | incremental
    entities        Array(LowCardinality(String)),
    date_from       Nullable(DateTime64(3, 'UTC')),
    date_to         Nullable(DateTime64(3, 'UTC')),
    scheduled_for   Nullable(DateTime64(3, 'UTC')),
    status          LowCardinality(String),          -- queued | running | success | failed | cancelled
    attempt         UInt16,                          -- attempts started so far (each is a run)
    failures        UInt16,                          -- attempts that failed (interrupted ones do not count)
    max_attempts    UInt16,
    not_before      DateTime64(3, 'UTC'),            -- a retry waits for the platform's retry_after
    runner_id       String,
    queued_at       DateTime64(3, 'UTC'),
    started_at      Nullable(DateTime64(3, 'UTC')),
    heartbeat_at    Nullable(DateTime64(3, 'UTC')),
    finished_at     Nullable(DateTime64(3, 'UTC')),
    checkpoint      String,
    stats           String,
    error_code      String,
    error           String,
    notification    String,                          -- JSON: the webhook delivery, '' before one
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (integration_id, sync_id);

-- Every attempt of a job, as it ran: `statistics`, `sync_status`, `last_sync` and the health
-- endpoint are computed from these. status: running | success | failed | interrupted (the runner
-- stopped or died; the job resumes and the attempt counts neither as success nor as failure).
CREATE TABLE IF NOT EXISTS integration_sync_runs
(
    integration_id  UInt64,
    sync_id         String,
    attempt         UInt16,
    tenant_id       UInt64,
    integration_type LowCardinality(String),
    status          LowCardinality(String),
    started_at      DateTime64(3, 'UTC'),
    finished_at     Nullable(DateTime64(3, 'UTC')),
    duration_ms     UInt64,
    error_code      String,
    error           String,                          -- JSON {code, error, solution, retry_after?, duration?} or ''
    stats           String,
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (integration_id, sync_id, attempt);

-- Incremental syncs: the end of the last window synced completely, per integration and entity.
CREATE TABLE IF NOT EXISTS integration_watermarks
(
    integration_id  UInt64,
    entity          LowCardinality(String),
    watermark       DateTime64(3, 'UTC'),
    sync_id         String,
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (integration_id, entity);

-- Customers a connector has published, by their id in the external system: an order whose buyer
-- is not here (nor in this run's pages) comes from an unknown customer.
CREATE TABLE IF NOT EXISTS connector_customers
(
    integration_id  UInt64,
    external_id     String,
    customer_id     UInt64,
    tenant_id       UInt64,
    first_seen_at   DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (integration_id, external_id);
