-- Demographic enrichment of each customer (pipelines/demographics): age from the national id,
-- gender from the CUIL prefix or the first name, the corrected location and its region.
-- `version` is the customer profile's version (event time and life-cycle step), so a replay or a
-- redelivery converges on the same row.
CREATE TABLE IF NOT EXISTS customer_demographics
(
    tenant_id                  UInt64,
    customer_id                UInt64,
    version                    UInt64,
    national_id_type           Nullable(String),
    estimated_birth_year       Nullable(UInt16),
    estimated_age              Nullable(UInt8),
    age_segment                Nullable(String),
    generation                 Nullable(String),
    social_ads_age_range       Nullable(String),
    search_ads_age_range       Nullable(String),
    gender                     Nullable(String),
    gender_source              Nullable(String),
    corrected_city             Nullable(String),
    corrected_province         Nullable(String),
    corrected_postal_code      Nullable(String),
    region                     Nullable(String),
    location_confidence        Float64,
    location_correction_needed UInt8,
    is_location_validated      UInt8,
    issues                     Array(String),
    enriched_at                DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, customer_id);
