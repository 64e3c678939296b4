-- Processing jobs, schedules and results-cache invalidations (pipelines/processing, docs/processing.md).
-- Not projections of the event log: these tables hold coordination state between API replicas
-- and survive a restart; `cdp replay` leaves them alone.

-- One row per job (a manual POST, a scheduled run, or a claim that lost the race). Every state
-- change inserts the whole row again with a higher version; readers use FINAL. The version is
-- rank * 2^44 + a per-process monotonic millisecond counter, rank 1 for queued/processing,
-- 2 for cancelling, 3 for the final states, so a cancel mark always beats a late heartbeat and a
-- final state beats both, whatever the clocks of the replicas say.
CREATE TABLE IF NOT EXISTS processing_jobs
(
    tenant_id         UInt64,
    job_id            String,
    kind              LowCardinality(String),          -- manual | scheduled
    schedule_id       String,                          -- '' for manual jobs
    occurrence_at     Nullable(DateTime64(3, 'UTC')),  -- the schedule's next_run this job serves
    status            LowCardinality(String),          -- queued | processing | cancelling | processed | failed | cancelled | rejected
    replica_id        String,
    analyses          Array(LowCardinality(String)),
    batch_size        UInt32,
    force             UInt8,
    claimed_at        DateTime64(3, 'UTC'),
    heartbeat_at      DateTime64(3, 'UTC'),
    started_at        Nullable(DateTime64(3, 'UTC')),  -- set once the claim won the lock
    finished_at       Nullable(DateTime64(3, 'UTC')),
    records_processed UInt64,
    total_time        Float64,                         -- seconds
    results           String,                          -- JSON of the endpoint's `results` object; '' until processed
    error             String,
    version           UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, job_id);

-- Processing schedules; POST .../schedule replaces the tenant's active schedule. The version is
-- next_run in epoch ms while active (advancing a recurring schedule always wins, two schedulers
-- advancing the same occurrence write the same row) and 2^44 + a monotonic counter once
-- deactivated, so a deactivation is never undone by a late advance.
CREATE TABLE IF NOT EXISTS processing_schedules
(
    tenant_id    UInt64,
    schedule_id  String,
    schedule_at  DateTime64(3, 'UTC'),
    recurring    UInt8,
    frequency    LowCardinality(String),          -- '' when not recurring
    analyses     Array(LowCardinality(String)),
    next_run     Nullable(DateTime64(3, 'UTC')),  -- NULL once a one-shot schedule ran or was deactivated
    active       UInt8,
    last_run_at  Nullable(DateTime64(3, 'UTC')),
    created_at   DateTime64(3, 'UTC'),
    updated_at   DateTime64(3, 'UTC'),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, schedule_id);

-- Latest explicit invalidation of a tenant's cached processing results: a processed run that
-- started before it is not served from the cache.
CREATE TABLE IF NOT EXISTS processing_cache_invalidations
(
    tenant_id      UInt64,
    invalidated_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(invalidated_at)
ORDER BY tenant_id;
