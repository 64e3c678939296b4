-- Audience sync (pipelines/audience-sync): which segments sync to which ad account, what each
-- custom audience holds, every upload batch, the audiences' size and delivery status, alerts,
-- and the client-side hourly call windows (so a restart cannot burst past the limits).

-- One configuration per synced segment. The ads token is stored encrypted (common/secrets.ts).
CREATE TABLE IF NOT EXISTS audience_sync_configs
(
    tenant_id      UInt64,
    config_id      String,
    name           String,
    segment        String,
    ad_account_id  String,
    token          String,
    audience_id    Nullable(String),
    status         LowCardinality(String),
    paused_reason  Nullable(String),
    blocked_until  Nullable(DateTime64(3, 'UTC')),
    created_at     DateTime64(3, 'UTC'),
    updated_at     DateTime64(3, 'UTC'),
    deleted        UInt8,
    version        UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, config_id);

-- The latest segment of each customer, from cdp.segment-changes.v1 (version: the change's time).
CREATE TABLE IF NOT EXISTS audience_customer_segments
(
    tenant_id    UInt64,
    customer_id  UInt64,
    segment      Nullable(String),
    version      UInt64,
    received_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id);

-- What each audience holds, per customer, as of the last successful upload (member 1 or 0).
-- `rejected`: the platform refused the row (invalid entry); it is not sent again until the
-- customer's membership changes. `hashed_schema`/`hashed_row`: exactly what was added, so a
-- removal sends the same row even if the customer's email or phone changed since.
CREATE TABLE IF NOT EXISTS audience_members
(
    tenant_id      UInt64,
    config_id      String,
    customer_id    UInt64,
    member         UInt8,
    rejected       UInt8,
    batch_id       String,
    hashed_schema  Array(String),
    hashed_row     Array(String),
    version        UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, config_id, customer_id);

-- Every upload batch: written `pending` before the call, then `done`, `dead_letter`, `failed`, or
-- `waiting` (a rate limit: not a failure).
CREATE TABLE IF NOT EXISTS audience_sync_batches
(
    tenant_id              UInt64,
    config_id              String,
    batch_id               String,
    audience_id            String,
    operation              LowCardinality(String),
    rows                   UInt32,
    status                 LowCardinality(String),
    num_received           Nullable(UInt32),
    num_invalid_entries    Nullable(UInt32),
    invalid_entry_samples  String,
    rejected_customer_ids  Array(UInt64),
    error                  Nullable(String),
    created_at             DateTime64(3, 'UTC'),
    updated_at             DateTime64(3, 'UTC'),
    version                UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, config_id, batch_id);

-- Audience size and delivery status (read on a schedule, or pushed by the platform's webhook).
-- `status_time`: when the status held (the read's time, or the event's `time`): an older event
-- arriving late never overwrites a newer status.
CREATE TABLE IF NOT EXISTS audience_status
(
    tenant_id             UInt64,
    config_id             String,
    audience_id           String,
    approximate_count     Nullable(UInt64),
    delivery_code         Nullable(Int32),
    delivery_description  Nullable(String),
    source                LowCardinality(String),
    status_time           DateTime64(3, 'UTC'),
    updated_at            DateTime64(3, 'UTC'),
    version               UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, config_id);

CREATE TABLE IF NOT EXISTS audience_sync_alerts
(
    tenant_id   UInt64,
    config_id   String,
    code        LowCardinality(String),
    message     String,
    created_at  DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (tenant_id, config_id, created_at);

-- Client-side hourly limits: the call times of each (operation, token digest) in the window.
CREATE TABLE IF NOT EXISTS ads_call_windows
(
    key         String,
    timestamps  Array(Int64),
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY key;
