-- Identity resolution (pipelines/identity, docs/identity.md): which profile (one person) each
-- source customer belongs to, the admins' splits and the tenants' identity settings. The
-- identifiers themselves are read from the `customers` projection (email, phone, national_id,
-- source_ids); these tables hold the outcome. Not projections of the event log: a resolution can
-- be recomputed from the customers at any time.

-- The current profile of every source customer; a new version at each merge or split. profile_id
-- is the oldest member's customer id.
CREATE TABLE IF NOT EXISTS customer_profiles
(
    tenant_id    UInt64,
    customer_id  UInt64,
    profile_id   UInt64,
    updated_at   DateTime64(3, 'UTC'),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id);

-- An admin's split: this customer's identifier links nothing (active = 0 when undone).
CREATE TABLE IF NOT EXISTS identity_exclusions
(
    tenant_id    UInt64,
    customer_id  UInt64,
    identifier   String,
    created_at   DateTime64(3, 'UTC'),
    active       UInt8,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id, identifier);

-- The last resolution of a tenant: when it started (a tenant whose data changed since is due
-- again, common/store/data-changes.ts), its counts, and the identifiers it refused to link (too
-- many customers carry them), for the alert.
CREATE TABLE IF NOT EXISTS identity_resolutions
(
    tenant_id     UInt64,
    resolved_at   DateTime64(3, 'UTC'),
    customers     UInt64,
    profiles      UInt64,
    blocked       Array(Tuple(identifier String, customers UInt64)),
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY tenant_id;

-- A tenant's identity settings (docs/identity.md): which identifier kinds link customers and how
-- many customers may carry one identifier before it links none of them. No row: the defaults.
CREATE TABLE IF NOT EXISTS identity_settings
(
    tenant_id                     UInt64,
    merge_kinds                   Array(LowCardinality(String)),
    max_customers_per_identifier  UInt32,
    updated_at                    DateTime64(3, 'UTC'),
    version                       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY tenant_id;

-- Tenants whose customers were stored before tenant_data_changes existed (migration 010) have no
-- change mark, and would never be resolved: mark each once. On a new database this inserts nothing.
INSERT INTO tenant_data_changes SELECT tenant_id, now64(3, 'UTC') FROM customers GROUP BY tenant_id;
