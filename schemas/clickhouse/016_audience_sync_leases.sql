-- Which audience-sync process syncs a configuration (docs/audience-sync.md, "Several
-- audience-sync processes"): the owner writes a heartbeat at least every third of the lease; a
-- heartbeat older than the lease (a process that died) lets another take the configuration over,
-- and a process that stops writes a heartbeat of 0 so another takes over at once.
CREATE TABLE IF NOT EXISTS audience_sync_leases
(
    config_id    String,
    owner        String,
    heartbeat_at DateTime64(3, 'UTC'),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY config_id;
