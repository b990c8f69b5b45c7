#!/usr/bin/env python3
"""gen-data.py - write folio's example freight tables and SKU catalog.

    python3 data/gen-data.py [DIR]      (default: the directory of this script)

Writes DIR/freight/economy.csv, DIR/freight/express.csv (VTEX shipping-rate
template, one file per carrier) and DIR/catalog.csv.  Deterministic: the
same script writes the same bytes, so the committed files can be checked
against it.  The prices are examples, not any carrier's tariff.
"""
import os
import random
import sys

# CEP ranges by state, after the public Correios ranges by UF.  Some states
# have two ranges (AM, DF, GO; RO keeps its pre-2008 range 78900-78999).
# SP, RJ and MG are split into capital / metropolitan / interior bands.
# 00000-000..00999-999 is in no range: the load generator draws its
# uncovered CEPs from there.
#   (band, zone, [(first, last), ...])   zone 1 = near the SP warehouse
REGIONS = [
    ("SP-Capital", 1, [(1000000, 5999999), (8000000, 8499999)]),
    ("SP-Metropolitana", 1, [(6000000, 7999999), (8500000, 9999999)]),
    ("SP-Interior", 2, [(10000000, 19999999)]),
    ("RJ-Capital", 2, [(20000000, 23799999)]),
    ("RJ-Interior", 3, [(23800000, 28999999)]),
    ("ES", 3, [(29000000, 29999999)]),
    ("MG-BH", 2, [(30000000, 34999999)]),
    ("MG-Interior", 3, [(35000000, 39999999)]),
    ("BA", 4, [(40000000, 48999999)]),
    ("SE", 4, [(49000000, 49999999)]),
    ("PE", 4, [(50000000, 56999999)]),
    ("AL", 4, [(57000000, 57999999)]),
    ("PB", 4, [(58000000, 58999999)]),
    ("RN", 4, [(59000000, 59999999)]),
    ("CE", 4, [(60000000, 63999999)]),
    ("PI", 5, [(64000000, 64999999)]),
    ("MA", 5, [(65000000, 65999999)]),
    ("PA", 5, [(66000000, 68899999)]),
    ("AP", 5, [(68900000, 68999999)]),
    ("AM", 5, [(69000000, 69299999), (69400000, 69899999)]),
    ("RR", 5, [(69300000, 69399999)]),
    ("AC", 5, [(69900000, 69999999)]),
    ("DF", 3, [(70000000, 72799999), (73000000, 73699999)]),
    ("GO", 3, [(72800000, 72999999), (73700000, 76799999)]),
    ("RO", 5, [(76800000, 76999999), (78900000, 78999999)]),
    ("TO", 4, [(77000000, 77999999)]),
    ("MT", 4, [(78000000, 78899999)]),
    ("MS", 3, [(79000000, 79999999)]),
    ("PR", 2, [(80000000, 87999999)]),
    ("SC", 3, [(88000000, 89999999)]),
    ("RS", 3, [(90000000, 99999999)]),
]

# Weight bands (grams, inclusive), and each band's price as a multiple of
# the first band's.  Above 2 kg a price per extra gram applies too.
BANDS = [(0, 300), (301, 500), (501, 1000), (1001, 2000), (2001, 5000),
         (5001, 10000), (10001, 20000), (20001, 30000)]
FACTOR = [100, 112, 130, 162, 210, 300, 450, 640]  # percent

ECONOMY = {  # zone: (first band in centavos, centavos per kg extra, days)
    1: (1290, 90, "2.00:00:00"),
    2: (1650, 140, "4.00:00:00"),
    3: (2190, 210, "6.00:00:00"),
    4: (2750, 280, "9.00:00:00"),
    5: (3490, 320, "14.00:00:00"),
}
# The express carrier serves the South, the Southeast, DF and GO only.
EXPRESS = {
    1: (2490, 180, "0.18:00:00"),
    2: (3150, 260, "1.12:00:00"),
    3: (3990, 340, "2.12:00:00"),
}
EXPRESS_BANDS = {"SP-Capital", "SP-Metropolitana", "SP-Interior",
                 "RJ-Capital", "RJ-Interior", "ES", "MG-BH", "MG-Interior",
                 "DF", "GO", "MS", "PR", "SC", "RS"}

HEADER = ["ZipCodeStart", "ZipCodeEnd", "PolygonName", "WeightStart",
          "WeightEnd", "AbsoluteMoneyCost", "PricePercent",
          "PriceByExtraWeight", "MaxVolume", "TimeCost", "Country",
          "MinimumValueInsurance"]


def money(cents, comma):
    s = "%d.%02d" % (cents // 100, cents % 100)
    return s.replace(".", ",") if comma else s


def per_gram(cents_per_kg, comma):
    # BRL per gram with 6 decimals: 90 centavos/kg = 0.000900 BRL/g
    s = "%d.%06d" % (cents_per_kg // 100000, (cents_per_kg % 100000) * 10)
    return s.replace(".", ",") if comma else s


def table(tariff, bands, sep, comma, percent, volume, country):
    rows = [sep.join(HEADER)]
    for name, zone, ranges in REGIONS:
        if bands is not None and name not in bands:
            continue
        base, extra_kg, days = tariff[zone if zone in tariff else max(tariff)]
        for lo, hi in ranges:
            for i, (wlo, whi) in enumerate(BANDS):
                cost = (base * FACTOR[i] + 50) // 100
                rate = extra_kg if wlo > 2000 else 0
                rows.append(sep.join([
                    "%08d" % lo, "%08d" % hi, name, str(wlo), str(whi),
                    money(cost, comma), percent, per_gram(rate, comma),
                    str(volume), days, country, money(0, comma)]))
    return "\n".join(rows) + "\n"


# Catalog: (prefix, count, weight g, length, width, height cm, price BRL)
CATEGORIES = [
    ("BOOK", 180, (150, 1200), (14, 24), (10, 17), (1, 6), (19, 130)),
    ("ACC", 160, (20, 250), (8, 20), (5, 14), (1, 5), (9, 100)),
    ("APP", 160, (150, 700), (25, 35), (20, 30), (2, 6), (39, 300)),
    ("CEL", 50, (300, 550), (16, 20), (9, 11), (5, 8), (799, 7999)),
    ("SHOE", 100, (700, 1600), (30, 36), (19, 24), (10, 14), (129, 900)),
    ("KIT", 120, (300, 4000), (15, 45), (12, 35), (8, 30), (29, 600)),
    ("TOY", 90, (200, 3000), (15, 60), (10, 40), (8, 35), (25, 500)),
    ("ELE", 80, (300, 2500), (12, 40), (10, 30), (5, 20), (60, 2500)),
    ("APL", 35, (3000, 10000), (35, 55), (30, 45), (25, 40), (250, 3500)),
    ("TV", 10, (5000, 12000), (80, 110), (50, 65), (10, 14), (1500, 6000)),
    ("FURN", 15, (8000, 15000), (60, 100), (40, 50), (8, 15), (300, 2500)),
]


def catalog(rng):
    rows = ["sku,weight_g,length_cm,width_cm,height_cm,price_cents"]
    items = []
    for prefix, count, w, l, wi, h, p in CATEGORIES:
        for n in range(1, count + 1):
            it = (rng.randint(*w), rng.randint(*l), rng.randint(*wi),
                  rng.randint(*h), rng.randint(p[0] * 100, p[1] * 100 - 10))
            items.append(it)
            rows.append("%s-%05d,%d,%d,%d,%d,%d" % ((prefix, n) + it))
    return "\n".join(rows) + "\n", items


def too_heavy_share(items, rng, threshold=5000, limit=30000, n=100000):
    """Share of random carts (1-10 SKUs, qty 1) over the heaviest band."""
    over = 0
    for _ in range(n):
        cart = [rng.choice(items) for _ in range(rng.randint(1, 10))]
        weight = sum(c[0] for c in cart)
        vol = sum(c[1] * c[2] * c[3] for c in cart)
        cubic = (vol + 5) // 6
        billed = max(weight, cubic) if cubic > threshold else weight
        over += billed > limit
    return over / n


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    os.makedirs(os.path.join(out, "freight"), exist_ok=True)
    files = {
        # Spreadsheet style of Brazil: ';' and decimal commas.
        "freight/economy.csv": table(ECONOMY, None, ";", True, "0,5",
                                     1000000, "BRA"),
        # The other style: ',' and decimal points.
        "freight/express.csv": table(EXPRESS, EXPRESS_BANDS, ",", False,
                                     "1.0", 500000, "BRA"),
    }
    text, items = catalog(random.Random(4))
    files["catalog.csv"] = text
    for name, body in files.items():
        with open(os.path.join(out, name), "w", newline="\n") as f:
            f.write(body)
    print("carts of 1-10 SKUs over 30 kg billed: %.1f%%"
          % (100 * too_heavy_share(items, random.Random(5))))


if __name__ == "__main__":
    main()
