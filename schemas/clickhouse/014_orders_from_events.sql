-- The orders projection is fed by ClickHouse from order_events (docs/analytics-performance.md,
-- "Ingest"): the projection sends each order event once, and this view writes the order's state row
-- in the same insert, with the rule of `orderStateRow` (pipelines/projection/rows.ts): the event's
-- status, totals and time, items_count = number of items, is_cancelled for a `cancelled` event,
-- version = occurred_at (ms) * 4 + the life-cycle step's rank (common/events.ts `orderVersion`).
CREATE MATERIALIZED VIEW IF NOT EXISTS orders_from_events TO orders AS
SELECT
    tenant_id,
    customer_id,
    order_id,
    event_id AS last_event_id,
    status,
    total,
    refunded_amount,
    currency,
    toUInt32(length(items)) AS items_count,
    placed_at,
    occurred_at AS updated_at,
    toUInt8(event_type = 'cancelled') AS is_cancelled,
    source,
    toUInt64(toUnixTimestamp64Milli(occurred_at) * 4 + multiIf(event_type = 'status_changed', 1, event_type = 'cancelled', 2, event_type = 'refunded', 3, 0)) AS version
FROM order_events;
