#!/usr/bin/env python3
"""Reference numbers for test/features/retail-models.test.ts, from lifetimes (the independent check).

Reads the UCI Online Retail invoices (../shared/data/retail/online_retail_invoices.csv:
InvoiceNo,InvoiceDate,CustomerID,TotalPrice), summarises them the BTYD way in days with the
observation period ending at the data's end (2011-12-09; same-day invoices merge into one
purchase), fits BG/NBD, MBG/NBD (penalizer 0) and Gamma-Gamma (repeat buyers), and prints one
JSON object: the fits, sums over all customers and per-customer predictions for a sample.

Horizon: our `expected_purchases` covers CDP_CLV_HORIZON_MONTHS (12) months of 365.25 / 12 =
30.4375 days, i.e. 365.25 days, so E[Y] is printed at 365.25 days (and at 365 for reference).
`clv` repeats our discounted CLV (features.ts): Σ_{k=1..12} E[M]·(E[Y(30.4375k)] − E[Y(30.4375(k−1))]) / 1.01^k,
with E[M] the Gamma-Gamma conditional expected spend.

Not run by CI. To regenerate:

    python3 -m venv /tmp/lt && /tmp/lt/bin/pip install lifetimes pandas
    /tmp/lt/bin/python test/third-party/retail_lifetimes.py [path/to/online_retail_invoices.csv]

Produced with lifetimes 0.11.3, pandas 3.1.1, scipy 1.17.1, numpy 2.4.6.
"""
import json
import os
import sys
import warnings

import pandas as pd
from lifetimes import BetaGeoFitter, GammaGammaFitter, ModifiedBetaGeoFitter
from lifetimes.utils import summary_data_from_transaction_data

warnings.filterwarnings("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CSV = os.path.join(HERE, "../../../shared/data/retail/online_retail_invoices.csv")
END = "2011-12-09"
MONTH = 365.25 / 12
HORIZON = 12 * MONTH
SAMPLE = [12346, 12347, 12348, 12349, 12350, 12748, 12845, 13089, 13093, 14096, 14606, 14911, 15107, 15311, 16446, 16725, 17841, 18102, 18283]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_CSV
    df = pd.read_csv(path, parse_dates=["InvoiceDate"])
    s = summary_data_from_transaction_data(
        df, "CustomerID", "InvoiceDate", monetary_value_col="TotalPrice", observation_period_end=END, freq="D"
    )
    x, tx, T = s["frequency"], s["recency"], s["T"]  # s.T would be the transpose
    bg = BetaGeoFitter(penalizer_coef=0.0).fit(x, tx, T)
    mbg = ModifiedBetaGeoFitter(penalizer_coef=0.0).fit(x, tx, T)
    rep = s[(s["frequency"] > 0) & (s["monetary_value"] > 0)]
    gg = GammaGammaFitter(penalizer_coef=0.0).fit(rep["frequency"], rep["monetary_value"])
    spend = gg.conditional_expected_average_profit(s["frequency"], s["monetary_value"])

    def clv(model, i):
        total, prev = 0.0, 0.0
        for k in range(1, 13):
            cum = float(model.conditional_expected_number_of_purchases_up_to_time(k * MONTH, x.loc[i], tx.loc[i], T.loc[i]))
            total += float(spend.loc[i]) * (cum - prev) / 1.01**k
            prev = cum
        return total

    fits = {}
    for name, model in (("bgnbd", bg), ("mbgnbd", mbg)):
        ey = pd.Series(model.conditional_expected_number_of_purchases_up_to_time(HORIZON, x, tx, T), index=s.index)
        alive = pd.Series(model.conditional_probability_alive(x, tx, T), index=s.index)
        fits[name] = {
            "params": {k: float(v) for k, v in model.params_.items()},
            "sum_expected_purchases_365_25": float(ey.sum()),
            "sum_p_alive": float(alive.sum()),
            "min_p_alive": float(alive.min()),
            "customers": {
                str(i): {
                    "expected_purchases_365": float(model.conditional_expected_number_of_purchases_up_to_time(365, x.loc[i], tx.loc[i], T.loc[i])),
                    "expected_purchases_365_25": float(ey.loc[i]),
                    "p_alive": float(alive.loc[i]),
                    "clv": clv(model, i),
                }
                for i in SAMPLE
            },
        }
    out = {
        "observation_period_end": END,
        "customers": int(len(s)),
        "repeat_buyers": int(len(rep)),
        "summary": {str(i): {"x": float(x.loc[i]), "t_x": float(tx.loc[i]), "T": float(T.loc[i]), "zbar": float(s["monetary_value"].loc[i])} for i in SAMPLE},
        **fits,
        "gammagamma": {"params": {"p": float(gg.params_["p"]), "q": float(gg.params_["q"]), "gamma": float(gg.params_["v"])}},
        "expected_spend": {str(i): float(spend.loc[i]) for i in SAMPLE},
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
