-- Which feature consumer refreshes a tenant's model in a tick interval (docs/features.md, "Several
-- feature processes"): every consumer due to refresh inserts a claim for (tenant, slot), slot =
-- the interval's number since the epoch; the earliest claim by the store's clock wins, the others
-- keep the stored model. Claims are kept a day.
CREATE TABLE IF NOT EXISTS model_refresh_claims
(
    tenant_id  UInt64,
    slot       UInt64,
    owner      String,
    claimed_at DateTime64(6, 'UTC')
)
ENGINE = MergeTree
ORDER BY (tenant_id, slot, claimed_at)
TTL toDateTime(claimed_at) + INTERVAL 1 DAY;
