-- Incremental identity resolution (pipelines/identity/resolve.ts, docs/identity.md): a tenant's
-- resolution after the first one reads only the customers ingested since the last one (and the
-- profiles their identifiers reach), instead of every customer of the tenant.

-- When each projection row was written (the store's clock). Rows written before this migration
-- read as "now" until the mutation below has filled them, so they count as changed: a tenant's
-- first resolution afterwards is a full one anyway (it has no identifier index yet).
ALTER TABLE customers ADD COLUMN IF NOT EXISTS ingested_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE customers MATERIALIZE COLUMN ingested_at;
ALTER TABLE orders ADD COLUMN IF NOT EXISTS ingested_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE orders MATERIALIZE COLUMN ingested_at;

-- The identifier index: which source customers carry each normalised identifier (kind:value), as
-- of the customer's latest profile. active = 0: the customer no longer carries it.
CREATE TABLE IF NOT EXISTS identity_keys
(
    tenant_id    UInt64,
    identifier   String,
    customer_id  UInt64,
    active       UInt8,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, identifier, customer_id);

-- A resolution's store-clock start (the next one reads customers ingested from a little before
-- it) and the version of the tenant's settings it applied (a change means a full resolution).
ALTER TABLE identity_resolutions ADD COLUMN IF NOT EXISTS ingest_mark DateTime64(3, 'UTC') DEFAULT toDateTime64(0, 3, 'UTC');
ALTER TABLE identity_resolutions ADD COLUMN IF NOT EXISTS settings_version UInt64 DEFAULT 0;
ALTER TABLE identity_resolutions ADD COLUMN IF NOT EXISTS mode LowCardinality(String) DEFAULT 'full';
