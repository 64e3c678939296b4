-- Console sessions that were signed out (services/api/session.ts): a session cookie carries a
-- random id; signing out records it here so every API replica refuses the cookie (each within its
-- lookup cache's minute), though the cookie itself is valid until it expires. Rows are dropped
-- once the session would have expired anyway.
CREATE TABLE IF NOT EXISTS console_session_revocations
(
    session_id  String,
    revoked_at  DateTime64(3, 'UTC'),
    expires_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY session_id
TTL toDateTime(expires_at) + INTERVAL 1 DAY;
