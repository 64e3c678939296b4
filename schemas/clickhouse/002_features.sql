-- Customer features (pipelines/features). Written by the streaming consumer, the scheduled tick
-- and the processing API's full recompute; all of them compute the same values from the same
-- order facts, so whichever row is latest (highest version) is right.

-- The feature consumer's state store: one fact per order (its latest event), keyed by the log
-- partition that owns the customer, so a consumer (re)loads exactly the partitions it is given.
CREATE TABLE IF NOT EXISTS feature_order_facts
(
    partition    UInt16,
    tenant_id    UInt64,
    customer_id  UInt64,
    order_id     String,
    version      UInt64,
    event_id     String,
    placed_at    DateTime64(3, 'UTC'),
    total_cents  Int64,
    cancelled    UInt8
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (partition, tenant_id, customer_id, order_id);

-- One row per tenant and customer: the spec's stored RFM record (tenant_id .. processed_at),
-- then the aggregates behind it, CLV and churn. Scores and segment are NULL for a customer with
-- no counting order (never bought, or every order cancelled or fully refunded).
CREATE TABLE IF NOT EXISTS customer_features
(
    tenant_id            UInt64,
    customer_id          UInt64,
    email                String,
    recency_days         Nullable(UInt32),
    frequency            UInt32,
    monetary             Decimal(15, 2),
    r_score              Nullable(UInt8),
    f_score              Nullable(UInt8),
    m_score              Nullable(UInt8),
    rfm_score            Nullable(String),
    segment              Nullable(String),
    processed_at         DateTime64(3, 'UTC'),

    partition            UInt16,
    email_version        UInt64,
    first_order_at       Nullable(DateTime64(3, 'UTC')),
    last_order_at        Nullable(DateTime64(3, 'UTC')),
    purchase_days        UInt32,
    repeat_purchases     UInt32,
    repeat_span_days     UInt32,
    repeat_avg_value     Float64,
    avg_order_value      Float64,

    historical_value     Decimal(15, 2),
    predicted_value      Nullable(Float64),
    total_clv            Nullable(Float64),
    clv_tier             Nullable(String),
    expected_purchases   Nullable(Float64),
    p_alive              Nullable(Float64),

    churn_risk           Nullable(String),
    churn_probability    Nullable(Float64),
    order_frequency_days Nullable(Float64),
    expected_order_date  Nullable(Date),
    days_overdue         Nullable(UInt32),
    potential_loss       Nullable(Float64),
    recommended_action   Nullable(String),

    model_version        UInt64,
    version              UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id);

-- Per-tenant model: RFM quintile thresholds and the fitted CLV parameters (JSON), newest wins.
CREATE TABLE IF NOT EXISTS tenant_models
(
    tenant_id     UInt64,
    version       UInt64,
    fitted_at     DateTime64(3, 'UTC'),
    customers     UInt64,
    model         String
)
ENGINE = ReplacingMergeTree(version)
ORDER BY tenant_id;

-- Every emitted segment change, for movements (upgrades, downgrades) in the analytics.
CREATE TABLE IF NOT EXISTS segment_changes
(
    tenant_id          UInt64,
    customer_id        UInt64,
    event_id           String,
    occurred_at        DateTime64(3, 'UTC'),
    previous_segment   Nullable(String),
    segment            Nullable(String),
    previous_rfm_score Nullable(String),
    rfm_score          Nullable(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, occurred_at, customer_id, event_id);

-- Daily snapshot of each tenant's segments, for trends (written by the tick, idempotent per day).
CREATE TABLE IF NOT EXISTS segment_daily
(
    tenant_id      UInt64,
    day            Date,
    segment        String,
    customers      UInt64,
    monetary       Decimal(18, 2),
    avg_recency    Float64,
    avg_frequency  Float64,
    avg_monetary   Float64,
    computed_at    DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (tenant_id, day, segment);
