-- Every counting order of a customer (not cancelled, net total above zero) on its feature row,
-- as two parallel arrays ascending by placement time (then amount): `order_times` (epoch ms) and
-- `order_cents`. The feature pipeline writes them with every row (pipelines/features/order-facts.ts
-- `orderHistory`); the analytics read windows of them (a period's revenue, cohorts, the churn
-- window) from one row per customer instead of merging every order of the tenant with FINAL
-- (docs/analytics-performance.md). The default codec (LZ4): ZSTD saves a third of the space
-- and makes those reads 1.7 times slower.
ALTER TABLE customer_features ADD COLUMN IF NOT EXISTS order_times Array(Int64) AFTER avg_order_value;
ALTER TABLE customer_features ADD COLUMN IF NOT EXISTS order_cents Array(Int64) AFTER order_times;

-- Rows written before this migration: filled from the raw `orders` projection (latest event of
-- each order by (version, event id), the rule of the feature pipeline's order facts), as a new
-- version of the row. A row written since by the pipeline carries its own arrays and a higher
-- version. On a database without such rows this inserts nothing.
INSERT INTO customer_features
SELECT f.* REPLACE (h.history_times AS order_times, h.history_cents AS order_cents, f.version + 1 AS version)
FROM customer_features AS f FINAL
INNER JOIN
(
    SELECT tenant_id, customer_id,
           arrayMap(x -> x.1, arraySort(x -> (x.1, x.2), groupArray((placed_ms, cents)))) AS history_times,
           arrayMap(x -> x.2, arraySort(x -> (x.1, x.2), groupArray((placed_ms, cents)))) AS history_cents
    FROM
    (
        SELECT tenant_id, customer_id, o.1 AS placed_ms, o.2 AS cents, o.3 AS cancelled
        FROM
        (
            SELECT tenant_id, customer_id, order_id,
                   argMax(tuple(toUnixTimestamp64Milli(placed_at), toInt64(total * 100), is_cancelled), tuple(version, last_event_id)) AS o
            FROM orders
            WHERE (tenant_id, customer_id) IN (SELECT tenant_id, customer_id FROM customer_features FINAL WHERE frequency > 0 AND empty(order_times))
            GROUP BY tenant_id, customer_id, order_id
        )
    )
    WHERE cancelled = 0 AND cents > 0
    GROUP BY tenant_id, customer_id
) AS h ON h.tenant_id = f.tenant_id AND h.customer_id = f.customer_id
WHERE f.frequency > 0 AND empty(f.order_times);
