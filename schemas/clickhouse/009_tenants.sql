-- Tenant settings (common/store/tenant-settings.ts; GET/PUT /api/v2/cdp/tenants/{tenantId}/settings):
-- the name shown as `tenant_name`, the one currency the tenant's money is in (set by its first
-- order when unset; orders in another currency are refused) and the reference date its customers
-- age against: `now` (the wall clock), `data_end` (its latest order) or a fixed YYYY-MM-DD
-- (docs/features.md, "Reference date"). Every change inserts the whole row with a higher version.
CREATE TABLE IF NOT EXISTS tenants
(
    tenant_id       UInt64,
    tenant_name     Nullable(String),
    currency        Nullable(String),
    reference_date  String,
    updated_at      DateTime64(3, 'UTC'),
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY tenant_id;

-- Feature rows computed as of another date than the tenant's reference, for one request's
-- `as_of` (analytics, customer list, POST /process with as_of): the columns of customer_features
-- plus the date. Kept a day (TTL on processed_at, the wall-clock time of the computation); a
-- migration that adds a column to customer_features adds it here too.
CREATE TABLE IF NOT EXISTS customer_features_as_of
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, as_of, customer_id)
TTL toDateTime(processed_at) + INTERVAL 1 DAY
AS SELECT toDate('1970-01-01') AS as_of, * FROM customer_features WHERE 0;
