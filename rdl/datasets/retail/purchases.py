"""Transactions and fraud reports (and the wide tables) of one block of customers.

Block ``b`` covers customers ``[b * BLOCK_CUSTOMERS, (b + 1) * BLOCK_CUSTOMERS)``
and draws from its own stream ``default_rng([seed, 1, b])`` (the wide tables
from ``default_rng([seed, 2, b])``), so the rows depend on the seed and the
block only, not on how they are batched into writes. Every draw is
vectorised over the block's rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rdl.datasets.retail import params as P
from rdl.datasets.retail.tables import TABLES, name_column, time_column
from rdl.datasets.retail.world import DAY_S, World


@dataclass
class Purchases:
    r"""The kept purchases of one customer block, for the wide tables.

    Args:
        lo, hi: The block's customers are ``lo..hi - 1``.
        leave_s: Per block customer, when it stops buying for good: its
            ``end_s`` or the purchase that stops it (``SPAN_S`` if neither
            falls in the data).
        transaction_id, customer, article, device, t_s: Per purchase.
    """

    lo: int
    hi: int
    leave_s: np.ndarray
    transaction_id: np.ndarray
    customer: np.ndarray
    article: np.ndarray
    device: np.ndarray
    t_s: np.ndarray


def num_blocks(world: World) -> int:
    """How many customer blocks the world's transactions are drawn in."""
    return -(-len(world.customers.signup_s) // P.BLOCK_CUSTOMERS)


def draw_block(world: World, block: int, first_ids: dict[str, int], *, repeats: bool = True,
               wide: bool = False) -> dict[str, pa.Table]:
    """The event tables of customer block ``block``, each with ids numbered
    from ``first_ids[table]``; without repeated (customer, article) pairs if
    not ``repeats``, and with the wide tables if ``wide``."""
    rng = np.random.default_rng([world.seed, 1, block])
    lo = block * P.BLOCK_CUSTOMERS
    cust = world.customers
    hi = min(lo + P.BLOCK_CUSTOMERS, len(cust.signup_s))
    owner, t_s, article, leave_s = _candidates(world, rng, lo, hi, repeats)
    customer = lo + owner
    community = cust.community[customer]
    device = _devices(world, rng, customer, community)
    merchant = _merchants(world, rng, community)
    fraud_p = 1 - ((1 - P.FRAUD_BASE)
                   * (1 - P.DEVICE_FRAUD * (t_s >= world.devices.compromised_s[device]))
                   * (1 - P.MERCHANT_FRAUD * (t_s >= world.merchants.compromised_s[merchant])))
    is_fraud = rng.random(len(t_s)) < fraud_p
    u = rng.random(len(t_s))
    channel = np.where(is_fraud, pick_codes(P.FRAUD_CHANNEL_SHARE, u),
                       pick_codes(P.CHANNEL_SHARE, u))
    sale = np.where(rng.random(len(t_s)) < P.SALE_SHARE, P.SALE_FACTOR, 1.0)
    mu = np.where(is_fraud, P.FRAUD_PRICE_LOG_MEAN, 0.0)
    price = world.articles.price[article] * sale * np.exp(mu + P.PRICE_LOG_SD
                                                          * rng.standard_normal(len(t_s)))
    fraud = np.flatnonzero(is_fraud)
    ids = first_ids["transactions"] + np.arange(len(t_s), dtype=np.int64)
    transactions = pa.table([
        pa.array(ids), pa.array(customer), pa.array(article), pa.array(device),
        pa.array(merchant), time_column(t_s), pa.array(np.round(price, 2)),
        name_column(channel, P.CHANNELS), pa.array(is_fraud),
    ], schema=TABLES["transactions"].schema)
    reported = rng.random(len(fraud)) < P.REPORT_SHARE
    delay = P.REPORT_MIN_DAYS + rng.gamma(P.REPORT_SHAPE, P.REPORT_SCALE_DAYS, len(fraud))
    reported_s = t_s[fraud] + np.floor(delay * DAY_S).astype(np.int64)
    keep = reported & (reported_s < P.SPAN_S)  # later reports are not filed yet
    rows = fraud[keep]
    reports = pa.table([
        pa.array(first_ids["fraud_reports"] + np.arange(len(rows), dtype=np.int64)),
        pa.array(ids[rows]), pa.array(device[rows]), pa.array(merchant[rows]),
        time_column(reported_s[keep]),
    ], schema=TABLES["fraud_reports"].schema)
    tables = {"transactions": transactions, "fraud_reports": reports}
    if wide:
        from rdl.datasets.retail.wide import draw_wide

        bought = Purchases(lo, hi, leave_s, ids, customer, article, device, t_s)
        tables.update(draw_wide(world, np.random.default_rng([world.seed, 2, block]), bought,
                                first_ids))
    return tables


def _candidates(world: World, rng: np.random.Generator, lo: int, hi: int, repeats: bool,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Candidate purchases of customers ``lo..hi``, without those after the
    first purchase that stops its customer: (customer - lo, time in s,
    article) per kept purchase, grouped by customer (not sorted by time), and
    each block customer's leave time (see :class:`Purchases`)."""
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
    article = pick_articles(world, rng, community)
    if not repeats:
        once = _redraw_repeats(world, rng, owner, community, article)
        owner, t_s, article = owner[once], t_s[once], article[once]
    # The customer stops after the earliest purchase whose stop fires.
    stop = rng.random(len(owner)) < world.articles.stop_p[article]
    first_stop = np.full(hi - lo, P.NEVER, dtype=np.int64)
    np.minimum.at(first_stop, owner[stop], t_s[stop])
    keep = t_s <= first_stop[owner]
    leave_s = np.minimum(cust.end_s[lo:hi], first_stop)
    return owner[keep], t_s[keep], article[keep], leave_s


def pick_articles(world: World, rng: np.random.Generator, community: np.ndarray) -> np.ndarray:
    """One article per row: a product group from the community's taste, then
    an article of that group by popularity."""
    comm, arts = world.communities, world.articles
    group = comm.taste_slots[community, (rng.random(len(community)) * P.TASTE_SLOTS).astype(
        np.int64)]
    ticket = arts.group_start[group] + (
        rng.random(len(community)) * arts.group_tickets[group]).astype(np.int64)
    return arts.tickets[ticket]


def _redraw_repeats(world: World, rng: np.random.Generator, owner: np.ndarray,
                    community: np.ndarray, article: np.ndarray) -> np.ndarray:
    """Redraws, in place, the article of each purchase whose (customer,
    article) pair came earlier, up to ``REPEAT_REDRAWS`` times; returns the
    mask of purchases whose pair is now unique."""
    n_articles = len(world.articles.group)
    again = _repeated(owner, article, n_articles)
    for _ in range(P.REPEAT_REDRAWS):
        if not again.any():
            break
        article[again] = pick_articles(world, rng, community[again])
        again = _repeated(owner, article, n_articles)
    return ~again


def _repeated(owner: np.ndarray, article: np.ndarray, n_articles: int) -> np.ndarray:
    """True where the row's (owner, article) pair occurs at an earlier row."""
    _, first = np.unique(owner * n_articles + article, return_index=True)
    repeated = np.ones(len(owner), dtype=bool)
    repeated[first] = False
    return repeated


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


def pick_codes(shares: tuple[float, ...], u: np.ndarray) -> np.ndarray:
    """Category index per uniform ``u``, with the given shares."""
    cdf = np.cumsum(shares) / np.sum(shares)
    code = np.zeros(len(u), dtype=np.int64)
    for bound in cdf[:-1]:
        code += u >= bound
    return code
