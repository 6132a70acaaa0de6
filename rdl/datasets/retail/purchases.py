"""Transactions and fraud reports of one block of customers.

Block ``b`` covers customers ``[b * BLOCK_CUSTOMERS, (b + 1) * BLOCK_CUSTOMERS)``
and draws from its own stream ``default_rng([seed, 1, b])``, so the rows
depend on the seed and the block only, not on how they are batched into
writes. Every draw is vectorised over the block's rows.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from rdl.datasets.retail import params as P
from rdl.datasets.retail.tables import TABLES, name_column, time_column
from rdl.datasets.retail.world import DAY_S, World


def num_blocks(world: World) -> int:
    """How many customer blocks the world's transactions are drawn in."""
    return -(-len(world.customers.signup_s) // P.BLOCK_CUSTOMERS)


def draw_block(world: World, block: int, first_transaction: int,
               first_report: int) -> tuple[pa.Table, pa.Table]:
    """The transactions and fraud reports of customer block ``block``, with
    ids numbered from ``first_transaction`` and ``first_report``."""
    rng = np.random.default_rng([world.seed, 1, block])
    lo = block * P.BLOCK_CUSTOMERS
    cust = world.customers
    hi = min(lo + P.BLOCK_CUSTOMERS, len(cust.signup_s))
    owner, t_s, article = _candidates(world, rng, lo, hi)
    customer = lo + owner
    community = cust.community[customer]
    device = _devices(world, rng, customer, community)
    merchant = _merchants(world, rng, community)
    fraud_p = 1 - ((1 - P.FRAUD_BASE)
                   * (1 - P.DEVICE_FRAUD * (t_s >= world.devices.compromised_s[device]))
                   * (1 - P.MERCHANT_FRAUD * (t_s >= world.merchants.compromised_s[merchant])))
    is_fraud = rng.random(len(t_s)) < fraud_p
    u = rng.random(len(t_s))
    channel = np.where(is_fraud, _pick(P.FRAUD_CHANNEL_SHARE, u), _pick(P.CHANNEL_SHARE, u))
    sale = np.where(rng.random(len(t_s)) < P.SALE_SHARE, P.SALE_FACTOR, 1.0)
    mu = np.where(is_fraud, P.FRAUD_PRICE_LOG_MEAN, 0.0)
    price = world.articles.price[article] * sale * np.exp(mu + P.PRICE_LOG_SD
                                                          * rng.standard_normal(len(t_s)))
    fraud = np.flatnonzero(is_fraud)
    transactions = pa.table([
        pa.array(first_transaction + np.arange(len(t_s), dtype=np.int64)),
        pa.array(customer), pa.array(article), pa.array(device), pa.array(merchant),
        time_column(t_s), pa.array(np.round(price, 2)), name_column(channel, P.CHANNELS),
        pa.array(is_fraud),
    ], schema=TABLES["transactions"].schema)
    reported = rng.random(len(fraud)) < P.REPORT_SHARE
    delay = P.REPORT_MIN_DAYS + rng.gamma(P.REPORT_SHAPE, P.REPORT_SCALE_DAYS, len(fraud))
    reported_s = t_s[fraud] + np.floor(delay * DAY_S).astype(np.int64)
    keep = reported & (reported_s < P.SPAN_S)  # later reports are not filed yet
    rows = fraud[keep]
    reports = pa.table([
        pa.array(first_report + np.arange(len(rows), dtype=np.int64)),
        pa.array(first_transaction + rows), pa.array(device[rows]), pa.array(merchant[rows]),
        time_column(reported_s[keep]),
    ], schema=TABLES["fraud_reports"].schema)
    return transactions, reports


def _candidates(world: World, rng: np.random.Generator, lo: int,
                hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate purchases of customers ``lo..hi``, without those after the
    first purchase that stops its customer: (customer - lo, time in s,
    article) per kept purchase, grouped by customer (not sorted by time)."""
    cust = world.customers
    count = rng.poisson(world.rate_scale * cust.rate[lo:hi] * cust.lam_span[lo:hi])
    owner = np.repeat(np.arange(hi - lo), count)
    # Times: uniform in cumulative intensity between signup and stop.
    lam = cust.lam_start[lo:hi][owner] + rng.random(len(owner)) * cust.lam_span[lo:hi][owner]
    day = np.clip(world.lam_lookup.index(lam) - 1, 0, len(world.lam_grid) - 2)
    step = world.lam_grid[day + 1] - world.lam_grid[day]
    days = day + (lam - world.lam_grid[day]) / step  # intensity is flat within a day
    t_s = np.clip(np.floor(days * DAY_S).astype(np.int64), cust.signup_s[lo:hi][owner],
                  P.SPAN_S - 1)
    community = cust.community[lo + owner]
    comm, arts = world.communities, world.articles
    group = comm.taste_slots[community, (rng.random(len(owner)) * P.TASTE_SLOTS).astype(np.int64)]
    ticket = arts.group_start[group] + (
        rng.random(len(owner)) * arts.group_tickets[group]).astype(np.int64)
    article = arts.tickets[ticket]
    # The customer stops after the earliest purchase whose stop fires.
    stop = rng.random(len(owner)) < arts.stop_p[article]
    busy = count > 0
    first_stop = np.minimum.reduceat(np.where(stop, t_s, P.NEVER),
                                     (np.cumsum(count) - count)[busy])
    keep = t_s <= np.repeat(first_stop, count[busy])
    return owner[keep], t_s[keep], article[keep]


def _devices(world: World, rng: np.random.Generator, customer: np.ndarray,
             community: np.ndarray) -> np.ndarray:
    comm = world.communities
    shared = comm.device_offset[community] + (
        rng.random(len(customer)) * comm.device_count[community]).astype(np.int64)
    primary = rng.random(len(customer)) < P.PRIMARY_DEVICE_SHARE
    return np.where(primary, world.customers.primary_device[customer], shared)


def _merchants(world: World, rng: np.random.Generator, community: np.ndarray) -> np.ndarray:
    n = len(community)
    slot = (rng.random(n) * P.FAVOURITE_MERCHANTS).astype(np.int64)
    favourite = world.communities.favourite_merchants[community, slot]
    tickets = world.merchants.tickets
    popular = tickets[(rng.random(n) * len(tickets)).astype(np.int64)]
    return np.where(rng.random(n) < P.FAVOURITE_MERCHANT_SHARE, favourite, popular)


def _pick(shares: tuple[float, ...], u: np.ndarray) -> np.ndarray:
    """Category index per uniform ``u``, with the given shares."""
    cdf = np.cumsum(shares) / np.sum(shares)
    code = np.zeros(len(u), dtype=np.int64)
    for bound in cdf[:-1]:
        code += u >= bound
    return code
