-- Features per profile (docs/identity.md): a profile's row is its surviving customer's; the row
-- of a customer absorbed into another's profile is deleted by a newer row with is_deleted = 1
-- (ReplacingMergeTree's delete marker: FINAL leaves the key out), and comes back with a newer live
-- row when a split makes it a profile again. Recreated in place from itself, so running this again
-- after an interruption changes nothing.
ALTER TABLE customer_features ADD COLUMN IF NOT EXISTS is_deleted UInt8 DEFAULT 0;
CREATE OR REPLACE TABLE customer_features ENGINE = ReplacingMergeTree(version, is_deleted) ORDER BY (tenant_id, customer_id) AS SELECT * FROM customer_features;
ALTER TABLE customer_features_as_of ADD COLUMN IF NOT EXISTS is_deleted UInt8 DEFAULT 0;

-- The feature consumer's state store for profiles: the latest profile-change record of every
-- profile whose key hashes to the partition (schemas/avro/profile-changed.avsc), so a restarted
-- consumer knows which customers its profiles hold. Newest record wins (version: its occurred_at).
CREATE TABLE IF NOT EXISTS feature_profiles
(
    partition      UInt16,
    tenant_id      UInt64,
    profile_id     UInt64,
    members        Array(UInt64),
    absorbed_into  Nullable(UInt64),
    event_id       String,
    version        UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (partition, tenant_id, profile_id);

-- The audience sync's view of profile changes (pipelines/audience-sync): when each profile's
-- membership last changed, so an audience row uploaded before it is replaced by one carrying the
-- profile's identifiers now (a merge adds a member's phone; a split takes it away).
CREATE TABLE IF NOT EXISTS audience_profile_changes
(
    tenant_id    UInt64,
    profile_id   UInt64,
    received_at  DateTime64(3, 'UTC'),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, profile_id);
