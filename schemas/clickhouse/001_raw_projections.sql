-- Raw projections of the customer and order topics. Rebuilt by `cdp replay` from the log.
-- ReplacingMergeTree keys make a redelivered event collapse into the row it duplicates;
-- readers use FINAL (or argMax/uniqExact) so duplicates never count twice before a merge.
-- No insert-deduplication window: after `cdp replay` truncates a table, a re-inserted block
-- identical to an earlier one must not be skipped.

-- Every order event once (dedupe key ends with event_id).
CREATE TABLE IF NOT EXISTS order_events
(
    tenant_id       UInt64,
    customer_id     UInt64,
    order_id        String,
    event_id        String,
    event_type      LowCardinality(String),
    status          LowCardinality(String),
    total           Decimal(15, 2),
    refunded_amount Nullable(Decimal(15, 2)),
    currency        LowCardinality(String),
    items           Array(Tuple(sku String, name Nullable(String), quantity UInt32, unit_price Decimal(15, 2))),
    placed_at       DateTime64(3, 'UTC'),
    occurred_at     DateTime64(3, 'UTC'),
    source          LowCardinality(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, customer_id, order_id, event_id);

-- Latest state of each order. `version` orders events by time, then by life-cycle step, so the
-- result does not depend on the order in which events arrive or are replayed.
CREATE TABLE IF NOT EXISTS orders
(
    tenant_id       UInt64,
    customer_id     UInt64,
    order_id        String,
    last_event_id   String,
    status          LowCardinality(String),
    total           Decimal(15, 2),
    refunded_amount Nullable(Decimal(15, 2)),
    currency        LowCardinality(String),
    items_count     UInt32,
    placed_at       DateTime64(3, 'UTC'),
    updated_at      DateTime64(3, 'UTC'),
    is_cancelled    UInt8,
    source          LowCardinality(String),
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id, order_id);

-- Latest profile of each customer.
CREATE TABLE IF NOT EXISTS customers
(
    tenant_id           UInt64,
    customer_id         UInt64,
    last_event_id       String,
    email               Nullable(String),
    first_name          Nullable(String),
    last_name           Nullable(String),
    phone               Nullable(String),
    national_id         Nullable(String),
    street              Nullable(String),
    city                Nullable(String),
    province            Nullable(String),
    postal_code         Nullable(String),
    country             Nullable(String),
    registration_source Nullable(String),
    created_at          Nullable(DateTime64(3, 'UTC')),
    source_ids          Array(Tuple(source String, id String)),
    source              LowCardinality(String),
    updated_at          DateTime64(3, 'UTC'),
    version             UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id);
