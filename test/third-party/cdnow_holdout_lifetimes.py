#!/usr/bin/env python3
"""Reference figures: BG/NBD and MBG/NBD calibration/holdout validation on CDNOW (2,357-customer sample)
computed with the Python package `lifetimes`.

Reference numbers for test/features/prediction-quality.test.ts. Not run by CI. To regenerate:

    python3 -m venv /tmp/lt && /tmp/lt/bin/pip install "lifetimes==0.11.3" "pandas<2" "numpy<1.24" "scipy<1.13"
    /tmp/lt/bin/python test/third-party/cdnow_holdout_lifetimes.py [data dir] [out.json]

Produced with lifetimes 0.11.3, pandas 1.5.3, numpy 1.23.5, scipy 1.12.0.

Setup (Fader, Hardie & Lee 2005): calibration = purchases 1997-01-01 .. 1997-09-30 (inclusive),
holdout = 1997-10-01 .. 1998-06-30 (inclusive).  Same-period purchases of a customer are merged
(lifetimes groups by customer and period, period = day for freq='D', week (W-SUN) for freq='W').
"""
import json
import sys
import warnings
from importlib.metadata import version

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")

import lifetimes  # noqa: E402
from lifetimes import BetaGeoFitter, ModifiedBetaGeoFitter  # noqa: E402
from lifetimes.utils import calibration_and_holdout_data  # noqa: E402

DATA = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/clv"
OUT = sys.argv[2] if len(sys.argv) > 2 else "/tmp/cdnow_holdout_lifetimes.json"
CAL_END = "1997-09-30"
OBS_END = "1998-06-30"
BUCKET_CAP = 7  # buckets 0..6 and 7+


def load_transactions():
    tx = pd.read_csv(
        f"{DATA}/CDNOW_sample.txt",
        delim_whitespace=True,
        header=None,
        names=["master_id", "sample_id", "date", "cds", "dollars"],
        dtype={"master_id": int, "sample_id": int, "date": str},
    )
    tx["date"] = pd.to_datetime(tx["date"], format="%Y%m%d")
    tx["customer_id"] = tx["sample_id"]
    return tx


def total_log_likelihood(fitter, frequency, recency, T):
    """Total log-likelihood on the ORIGINAL time unit, recomputed with the fitter's own
    likelihood function at the fitted params (penalizer 0). lifetimes' own
    `_negative_log_likelihood_` is the MEAN negative LL on time rescaled by 1/max(T) (see README notes)."""
    p = fitter.params_[["r", "alpha", "a", "b"]].values.astype(float)
    f = np.asarray(frequency).astype(int)
    rcy = np.asarray(recency, dtype=float)
    t = np.asarray(T, dtype=float)
    w = np.ones_like(rcy, dtype=int)
    mean_nll = fitter._negative_log_likelihood(np.log(p), f, rcy, t, w, 0.0)
    return -float(mean_nll) * len(f)


def fit_info(fitter, d):
    n = len(d)
    ll_total = total_log_likelihood(fitter, d.frequency_cal, d.recency_cal, d.T_cal)
    scaled_mean_nll = float(fitter._negative_log_likelihood_)
    return {
        "params": {k: float(v) for k, v in fitter.params_.items()},
        "log_likelihood_total_original_units": ll_total,
        "lifetimes_negative_log_likelihood_attr": scaled_mean_nll,
        "lifetimes_time_scale": float(fitter._scale),
        "log_likelihood_total_scaled_units": -scaled_mean_nll * n,
        "check_ll_identity": ll_total - (-scaled_mean_nll * n + float(d.frequency_cal.sum()) * np.log(fitter._scale)),
    }


def bucket_table(df, key):
    rows = []
    for k, g in df.groupby(key, sort=True):
        rows.append(
            {
                "bucket": k if not isinstance(k, (np.integer,)) else int(k),
                "n": int(len(g)),
                "mean_actual": float(g.actual.mean()),
                "mean_predicted": float(g.predicted.mean()),
                "sum_actual": float(g.actual.sum()),
                "sum_predicted": float(g.predicted.sum()),
                "mean_p_alive": float(g.p_alive.mean()),
                "share_purchased_holdout": float((g.actual > 0).mean()),
                "n_purchased_holdout": int((g.actual > 0).sum()),
            }
        )
    return rows


def evaluate(fitter, d):
    duration = float(d.duration_holdout.iloc[0])
    assert (d.duration_holdout == duration).all()
    pred = fitter.conditional_expected_number_of_purchases_up_to_time(
        duration, d.frequency_cal, d.recency_cal, d.T_cal
    )
    palive = fitter.conditional_probability_alive(d.frequency_cal, d.recency_cal, d.T_cal)
    df = pd.DataFrame(
        {
            "x": d.frequency_cal.astype(int).values,
            "actual": d.frequency_holdout.astype(float).values,
            "predicted": np.asarray(pred, dtype=float),
            "p_alive": np.asarray(palive, dtype=float),
        },
        index=d.index,
    )
    df["bucket"] = np.where(df.x >= BUCKET_CAP, f"{BUCKET_CAP}+", df.x.astype(str))
    sum_a, sum_p = float(df.actual.sum()), float(df.predicted.sum())
    by_bucket = bucket_table(df, "bucket")
    order = [str(i) for i in range(BUCKET_CAP)] + [f"{BUCKET_CAP}+"]
    by_bucket.sort(key=lambda r: order.index(r["bucket"]))
    return {
        "duration_holdout": duration,
        "totals": {
            "n": int(len(df)),
            "sum_actual": sum_a,
            "sum_predicted": sum_p,
            "mae": float((df.predicted - df.actual).abs().mean()),
            "rmse": float(np.sqrt(((df.predicted - df.actual) ** 2).mean())),
            "bias_rel": (sum_p - sum_a) / sum_a,
            "mean_p_alive": float(df.p_alive.mean()),
            "share_purchased_holdout": float((df.actual > 0).mean()),
            "n_purchased_holdout": int((df.actual > 0).sum()),
        },
        "by_bucket_0_to_6_and_7plus": by_bucket,
        "by_frequency_cal_full": bucket_table(df, "x"),
        # per-customer vectors (ordered by customer_id = sample_id 1..2357) for spot checks
        "per_customer": {
            "customer_id": [int(i) for i in df.index],
            "predicted": df.predicted.tolist(),
            "p_alive": df.p_alive.tolist(),
        },
    }


def main():
    tx = load_transactions()
    results = {
        "meta": {
            "python": sys.version.split()[0],
            "versions": {p: version(p) for p in ["lifetimes", "pandas", "numpy", "scipy", "autograd"]},
            "data": f"{DATA}/CDNOW_sample.txt (customer_id = sample_id)",
            "n_transaction_rows": int(len(tx)),
            "calibration_period_end": CAL_END,
            "observation_period_end": OBS_END,
            "call": "calibration_and_holdout_data(tx, 'customer_id', 'date', calibration_period_end='1997-09-30', "
            "observation_period_end='1998-06-30', freq=F)",
            "log_likelihood_note": "log_likelihood_total_original_units = sum over customers of the model's "
            "log-likelihood at the fitted params in the freq's time unit (days or weeks); lifetimes' "
            "fitter._negative_log_likelihood_ is the MEAN negative LL computed on time scaled by "
            "lifetimes_time_scale = 1/max(T_cal); the two differ by sum(frequency_cal)*log(scale).",
            "predicted": "fitter.conditional_expected_number_of_purchases_up_to_time(duration_holdout, "
            "frequency_cal, recency_cal, T_cal)",
            "p_alive": "fitter.conditional_probability_alive(frequency_cal, recency_cal, T_cal)",
            "actual": "frequency_holdout = number of distinct periods (days for D, W-SUN weeks for W) "
            "with >=1 purchase in (calibration_period_end, observation_period_end]",
        }
    }

    # --- sanity check: published BG/NBD fit on the week summary
    s = pd.read_csv(f"{DATA}/cdnow_customers_summary.csv")
    bg = BetaGeoFitter(penalizer_coef=0.0).fit(s["frequency"], s["recency"], s["T"])
    d_s = s.rename(columns={"frequency": "frequency_cal", "recency": "recency_cal", "T": "T_cal"})
    results["sanity_published_bgnbd_weeks_summary"] = {
        **fit_info(bg, d_s),
        "published": {"r": 0.243, "alpha": 4.414, "a": 0.793, "b": 2.426, "ll": -9582.4},
        "cond_exp_39w_x2_tx30.43_T38.86": float(
            bg.conditional_expected_number_of_purchases_up_to_time(39, 2, 30.43, 38.86)
        ),
        "published_cond_exp": 1.226,
    }

    for F in ["D", "W"]:
        d = calibration_and_holdout_data(
            tx, "customer_id", "date", calibration_period_end=CAL_END, observation_period_end=OBS_END, freq=F
        ).sort_index()
        block = {
            "n_customers": int(len(d)),
            "summary_stats": {
                "sum_frequency_cal": float(d.frequency_cal.sum()),
                "T_cal_min": float(d.T_cal.min()),
                "T_cal_max": float(d.T_cal.max()),
                "recency_cal_max": float(d.recency_cal.max()),
                "max_frequency_cal": int(d.frequency_cal.max()),
                "sum_frequency_holdout": float(d.frequency_holdout.sum()),
                "duration_holdout": float(d.duration_holdout.iloc[0]),
            },
        }
        for name, cls in [("BG/NBD", BetaGeoFitter), ("MBG/NBD", ModifiedBetaGeoFitter)]:
            fitter = cls(penalizer_coef=0.0).fit(d.frequency_cal, d.recency_cal, d.T_cal)
            block[name] = {"fit": fit_info(fitter, d), **evaluate(fitter, d)}
        results[f"freq_{F}"] = block

    with open(OUT, "w") as fh:
        json.dump(results, fh, indent=1)

    # compact printout
    sp = results["sanity_published_bgnbd_weeks_summary"]
    print("sanity BG/NBD weeks:", sp["params"], "LL", sp["log_likelihood_total_original_units"],
          "E[39w]", sp["cond_exp_39w_x2_tx30.43_T38.86"])
    for F in ["D", "W"]:
        b = results[f"freq_{F}"]
        print(f"\n=== freq={F}  n={b['n_customers']}  stats={b['summary_stats']}")
        for m in ["BG/NBD", "MBG/NBD"]:
            r = b[m]
            print(f"-- {m} params={r['fit']['params']} LL={r['fit']['log_likelihood_total_original_units']:.6f}"
                  f" (lifetimes attr {r['fit']['lifetimes_negative_log_likelihood_attr']:.8f})")
            print("   totals", r["totals"])
            print("   bucket   n  mean_act  mean_pred  sum_act  sum_pred  mean_palive  share_buy")
            for row in r["by_bucket_0_to_6_and_7plus"]:
                print(f"   {row['bucket']:>4} {row['n']:5d} {row['mean_actual']:9.4f} {row['mean_predicted']:9.4f}"
                      f" {row['sum_actual']:8.0f} {row['sum_predicted']:9.3f} {row['mean_p_alive']:9.4f}"
                      f" {row['share_purchased_holdout']:9.4f}")


if __name__ == "__main__":
    main()
