-- The feature consumer now breaks a tie between two states of one order with the same version (the
-- same millisecond and life-cycle step) by the state itself: cancelled, then the larger total, then
-- the later placement (docs/features.md); before, the larger event id won. The table's merge keeps
-- the row inserted last of a version, and the consumer writes a state only when it supersedes the
-- one it holds, so from now on the last row of a tie is the rule's winner. Rows written under the
-- old rule may have a tie whose last row is not: the winner is written once more, so a restore
-- reads the same state before and after the merge.
INSERT INTO feature_order_facts (partition, tenant_id, customer_id, order_id, version, event_id, placed_at, total_cents, cancelled)
SELECT partition, tenant_id, customer_id, order_id, w.1, w.2, w.3, w.4, w.5
FROM
(
    SELECT partition, tenant_id, customer_id, order_id,
           argMax(tuple(version, event_id, placed_at, total_cents, cancelled), tuple(version, cancelled, total_cents, placed_at)) AS w,
           argMin(tuple(version, cancelled, total_cents, placed_at), tuple(-toInt64(version), cancelled, total_cents, placed_at)) AS least
    FROM feature_order_facts
    GROUP BY partition, tenant_id, customer_id, order_id
    HAVING count() > 1
)
WHERE least != tuple(w.1, w.5, w.4, w.3);
