-- When a tenant's stored orders or customers last changed (common/store/data-changes.ts): the
-- projection pipeline writes one row per tenant of a batch after the batch's rows are written, so
-- a change that is visible here is visible in the projections too. A processing run records the
-- tenant's data version as it starts (`processing_jobs.data_version`); cached results of a run
-- whose version is no longer current are not served, and the status says `is_stale`
-- (docs/processing.md, "Results cache"). Not a projection of the event log: `cdp replay` rewrites
-- it as it rebuilds the projections.
CREATE TABLE IF NOT EXISTS tenant_data_changes
(
    tenant_id   UInt64,
    changed_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(changed_at)
ORDER BY tenant_id;

ALTER TABLE processing_jobs ADD COLUMN IF NOT EXISTS data_version String DEFAULT '' AFTER error;
