-- Tenant API keys (common/store/api-keys.ts, docs/auth.md). Only the SHA-256 of a key is stored:
-- a key is 256 random bits, so a fast hash is enough (no dictionary to guess from), and the
-- plain key is printed once by `cdp apikey create` and never kept.
-- Every change inserts the whole row again with a higher version; readers use FINAL. Version 1
-- is an active key, 2 a revoked one: a revocation always wins and is final.
CREATE TABLE IF NOT EXISTS api_keys
(
    key_id      String,                         -- public identifier (`cdp apikey list|revoke`)
    tenant_id   UInt64,
    name        String,
    key_prefix  String,                         -- the first characters of the key, to recognise it
    key_hash    String,                         -- hex SHA-256 of the whole key
    created_at  DateTime64(3, 'UTC'),
    revoked_at  Nullable(DateTime64(3, 'UTC')),
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY key_id;
