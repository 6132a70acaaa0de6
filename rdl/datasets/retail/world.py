"""The synthetic retail world: every entity's columns and hidden state.

Built once per (number of transactions, seed) from its own random stream;
arrays are per entity (customers, communities, articles, devices,
merchants), never per transaction, so memory grows with the entity counts
only. :mod:`rdl.datasets.retail.purchases` draws the transactions from it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rdl.datasets.retail import params as P
from rdl.datasets.retail.guide import GuideTable

DAY_S = 86_400


@dataclass
class Customers:
    r"""Per customer: visible columns and hidden purchase process.

    Args:
        community: Hidden community of each customer.
        signup_s: Signup time, seconds since :obj:`params.START`.
        age: Age in years.
        region: Index into :obj:`params.REGIONS`.
        club: Index into :obj:`params.CLUB_STATUS`.
        primary_device: The device a customer uses most.
        life_end_s: When the customer's own lifetime ends.
        shock_stop_s: When a community shock stops the customer
            (:obj:`params.NEVER` if it does not).
        end_s: ``min(SPAN_S, life_end_s, shock_stop_s)``.
        lam_start: Cumulative intensity at signup.
        lam_span: Cumulative intensity between signup and ``end_s``.
        rate: Purchase-rate weight ``w_c`` (candidate purchases per unit of
            intensity, before the world's rate scale).
    """

    community: np.ndarray
    signup_s: np.ndarray
    age: np.ndarray
    region: np.ndarray
    club: np.ndarray
    primary_device: np.ndarray
    life_end_s: np.ndarray
    shock_stop_s: np.ndarray
    end_s: np.ndarray
    lam_start: np.ndarray
    lam_span: np.ndarray
    rate: np.ndarray


@dataclass
class Communities:
    r"""Per community: taste, favourite merchants, devices and shock.

    Args:
        taste: Product-group distribution of purchases, shape ``[K, G]``
            (``TASTE_SHARE`` own taste plus the global group shares, in
            whole ``1 / TASTE_SLOTS``).
        taste_slots: Shape ``[K, TASTE_SLOTS]``; group ``g`` fills
            ``taste[k, g] * TASTE_SLOTS`` slots of row ``k``, so a uniform
            slot is a draw from ``taste[k]``.
        favourite_merchants: Shape ``[K, FAVOURITE_MERCHANTS]``.
        device_offset: First device id of each community.
        device_count: Number of devices of each community.
        shock_s: Shock time (:obj:`params.NEVER` if none).
    """

    taste: np.ndarray
    taste_slots: np.ndarray
    favourite_merchants: np.ndarray
    device_offset: np.ndarray
    device_count: np.ndarray
    shock_s: np.ndarray


@dataclass
class Articles:
    r"""Per article: visible columns, hidden quality and popularity.

    Args:
        group, colour, section: Indices into the params' name lists.
        price: List price.
        popularity: Whole tickets, the weight within its product group.
        quality: Hidden quality ``q_a ~ N(0, 1)``.
        stop_p: ``sigmoid(STOP_INTERCEPT - STOP_SLOPE * q_a)``.
        tickets: Each article id repeated ``popularity`` times, grouped by
            product group: a uniform ticket of a group is a draw from it.
        group_start: First ticket of each group.
        group_tickets: Number of tickets of each group.
    """

    group: np.ndarray
    colour: np.ndarray
    section: np.ndarray
    price: np.ndarray
    popularity: np.ndarray
    quality: np.ndarray
    stop_p: np.ndarray
    tickets: np.ndarray
    group_start: np.ndarray
    group_tickets: np.ndarray


@dataclass
class Devices:
    """Per device: community, first_seen (s), type/os indices, compromise time (s)."""

    community: np.ndarray
    first_seen_s: np.ndarray
    kind: np.ndarray
    os: np.ndarray
    os_names: tuple[str, ...]
    compromised_s: np.ndarray


@dataclass
class Merchants:
    """Per merchant: category/country indices, popularity tickets (merchant ids
    repeated by popularity), compromise time (s)."""

    category: np.ndarray
    country: np.ndarray
    tickets: np.ndarray
    compromised_s: np.ndarray


@dataclass
class World:
    r"""Everything the transactions are drawn from; see :func:`build_world`.

    Customer ``c`` has ``Poisson(rate_scale * rate_c * lam_span_c)`` candidate
    purchases; ``lam_grid`` holds the cumulative intensity at each day
    boundary and ``lam_lookup`` inverts it.
    """

    transactions: int
    seed: int
    lam_grid: np.ndarray
    lam_lookup: GuideTable
    rate_scale: float
    customers: Customers
    communities: Communities
    articles: Articles
    devices: Devices
    merchants: Merchants

    def __repr__(self) -> str:
        return (f"World(transactions={self.transactions}, seed={self.seed}, "
                f"customers={len(self.customers.signup_s)}, "
                f"communities={len(self.communities.shock_s)}, "
                f"articles={len(self.articles.group)}, devices={len(self.devices.kind)}, "
                f"merchants={len(self.merchants.category)})")


def build_world(transactions: int, seed: int, customers: int | None = None,
                articles: int | None = None) -> World:
    """Draws every entity of the world for about ``transactions`` purchases;
    ``customers`` and ``articles`` replace the counts derived from it."""
    rng = np.random.default_rng([seed, 0])
    n_customers = customers or max(P.MIN_CUSTOMERS,
                                   round(transactions / P.TRANSACTIONS_PER_CUSTOMER))
    n_communities = max(2, round(n_customers / P.CUSTOMERS_PER_COMMUNITY))
    n_articles = articles or max(P.MIN_ARTICLES, round(transactions / P.TRANSACTIONS_PER_ARTICLE))
    n_merchants = max(20, round(n_customers / P.CUSTOMERS_PER_MERCHANT))
    lam_grid = intensity_grid()
    articles = _articles(rng, n_articles)
    merchants = _merchants(rng, n_merchants)
    community = _draw(rng, rng.gamma(2.0, 1.0, n_communities), n_customers)
    signup_s = _signups(rng, n_customers)
    communities = _communities(rng, community, articles, n_communities, n_merchants)
    devices = _devices(rng, community, signup_s, communities)
    customers = _customers(rng, community, signup_s, communities, lam_grid)
    stop_p = _community_stop_p(communities.taste, articles)[community]
    scale = _rate_scale(customers.rate * customers.lam_span, stop_p, transactions)
    return World(transactions, seed, lam_grid, GuideTable(lam_grid, lam_grid[-1], 2.0), scale,
                 customers, communities, articles, devices, merchants)


def intensity_grid() -> np.ndarray:
    r"""Cumulative purchase intensity ``Lambda`` at each day boundary.

    ``f(d) = (1 + SEASON_AMPLITUDE cos(2 pi (d - SEASON_PEAK_DAY) / 365.25))
    * (WEEKEND_RATE on Saturdays and Sundays)``, scaled to mean 1, so that
    ``Lambda(SPAN_DAYS) = SPAN_DAYS``; ``Lambda`` is linear within a day.
    """
    day = np.arange(P.SPAN_DAYS)
    f = 1.0 + P.SEASON_AMPLITUDE * np.cos(2 * np.pi * (day - P.SEASON_PEAK_DAY) / 365.25)
    f *= np.where((day + P.START_WEEKDAY) % 7 >= 5, P.WEEKEND_RATE, 1.0)
    f /= f.mean()
    return np.concatenate([[0.0], np.cumsum(f)])


def intensity_at(lam_grid: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """``Lambda`` at times given in seconds since START."""
    return np.interp(seconds / DAY_S, np.arange(len(lam_grid)), lam_grid)


def _draw(rng: np.random.Generator, weights: np.ndarray, size: int) -> np.ndarray:
    """``size`` indices drawn with probability proportional to ``weights``."""
    cdf = np.cumsum(weights) / weights.sum()
    return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(weights) - 1)


def _seconds(days: np.ndarray) -> np.ndarray:
    return np.floor(days * DAY_S).astype(np.int64)


def _signups(rng: np.random.Generator, n: int) -> np.ndarray:
    launch = rng.random(n) < P.LAUNCH_SHARE
    days = np.where(launch, rng.uniform(0, P.LAUNCH_DAYS, n),
                    rng.uniform(0, P.SPAN_DAYS - P.LAUNCH_DAYS, n))
    return _seconds(days)


def _tickets(rng: np.random.Generator, n: int) -> np.ndarray:
    """Popularity in whole tickets: ``1 + floor(POPULARITY_TICKETS * LogNormal(0, sigma))``."""
    return 1 + np.floor(P.POPULARITY_TICKETS * rng.lognormal(0, P.POPULARITY_SIGMA, n)).astype(
        np.int64)


def _articles(rng: np.random.Generator, n: int) -> Articles:
    n_groups = len(P.PRODUCT_GROUPS)
    # every group gets at least one article, so every drawn group has one
    group = rng.permutation(np.concatenate([
        np.arange(n_groups), _draw(rng, np.asarray(P.GROUP_SHARE), n - n_groups)]))
    colour = rng.integers(0, len(P.COLOURS), n)
    section = rng.integers(0, len(P.SECTIONS), n)
    price = np.round(np.asarray(P.GROUP_PRICE)[group] * rng.lognormal(0, P.PRICE_SIGMA, n), 2)
    popularity = _tickets(rng, n)
    quality = rng.standard_normal(n)
    stop_p = 1.0 / (1.0 + np.exp(-(P.STOP_INTERCEPT - P.STOP_SLOPE * quality)))
    order = np.argsort(group, kind="stable")
    tickets = np.repeat(order, popularity[order])
    group_tickets = np.bincount(group, popularity, n_groups).astype(np.int64)
    group_start = np.cumsum(group_tickets) - group_tickets
    return Articles(group, colour, section, price, popularity, quality, stop_p, tickets,
                    group_start, group_tickets)


def _merchants(rng: np.random.Generator, n: int) -> Merchants:
    category = rng.integers(0, len(P.MERCHANT_CATEGORIES), n)
    country = rng.integers(0, len(P.COUNTRIES), n)
    tickets = np.repeat(np.arange(n), _tickets(rng, n))
    compromised = np.full(n, P.NEVER, dtype=np.int64)
    hit = rng.choice(n, max(1, round(P.MERCHANT_COMPROMISED_SHARE * n)), replace=False)
    compromised[hit] = _seconds(rng.uniform(30.0, P.SPAN_DAYS, len(hit)))
    return Merchants(category, country, tickets, compromised)


def _communities(rng: np.random.Generator, community: np.ndarray, articles: Articles,
                 n: int, n_merchants: int) -> Communities:
    n_groups = len(P.PRODUCT_GROUPS)
    global_share = articles.group_tickets / articles.group_tickets.sum()
    own = rng.dirichlet(np.full(n_groups, P.TASTE_CONCENTRATION), n)
    slots = _round_rows((P.TASTE_SHARE * own + (1 - P.TASTE_SHARE) * global_share)
                        * P.TASTE_SLOTS)
    taste_slots = np.repeat(np.tile(np.arange(n_groups, dtype=np.uint8), n), slots.ravel())
    favourites = rng.integers(0, n_merchants, (n, P.FAVOURITE_MERCHANTS))
    size = np.bincount(community, minlength=n)
    count = np.maximum(1, np.round(P.DEVICES_PER_CUSTOMER * size)).astype(np.int64)
    offset = np.cumsum(count) - count
    shocked = rng.random(n) < P.SHOCK_SHARE
    shock = np.where(shocked, _seconds(rng.uniform(P.SHOCK_FIRST_DAY, P.SPAN_DAYS, n)), P.NEVER)
    return Communities(slots / P.TASTE_SLOTS, taste_slots.reshape(n, P.TASTE_SLOTS),
                       favourites, offset, count, shock)


def _round_rows(x: np.ndarray) -> np.ndarray:
    """Rounds each row to whole numbers with the row's (whole) sum kept: the
    largest fractional parts round up."""
    low = np.floor(x).astype(np.int64)
    missing = np.round(x.sum(axis=1)).astype(np.int64) - low.sum(axis=1)
    rank = np.argsort(np.argsort(low - x, axis=1, kind="stable"), axis=1, kind="stable")
    return low + (rank < missing[:, None])


def _devices(rng: np.random.Generator, community: np.ndarray, signup_s: np.ndarray,
             communities: Communities) -> Devices:
    n = int(communities.device_count.sum())
    owner = np.repeat(np.arange(len(communities.device_count)), communities.device_count)
    start = np.full(len(communities.device_count), P.SPAN_S, dtype=np.int64)
    np.minimum.at(start, community, signup_s)
    start[start == P.SPAN_S] = 0  # a community without members
    jitter = _seconds(rng.uniform(0, P.FIRST_SEEN_JITTER_DAYS, n))
    first_seen = np.maximum(0, start[owner] - jitter)
    kind = _draw(rng, np.asarray(P.DEVICE_TYPE_SHARE), n)
    os_names = tuple(dict.fromkeys(o for t in P.DEVICE_TYPES for o in P.OS_BY_TYPE[t]))
    choices = [np.asarray([os_names.index(o) for o in P.OS_BY_TYPE[t]]) for t in P.DEVICE_TYPES]
    pick = rng.random(n)
    os = np.zeros(n, dtype=np.int64)
    for t, options in enumerate(choices):
        mine = kind == t
        os[mine] = options[(pick[mine] * len(options)).astype(np.int64)]
    compromised = np.full(n, P.NEVER, dtype=np.int64)
    hit = rng.choice(n, max(1, round(P.DEVICE_COMPROMISED_SHARE * n)), replace=False)
    compromised[hit] = first_seen[hit] + (rng.random(len(hit)) * (P.SPAN_S - first_seen[hit])
                                          ).astype(np.int64)
    return Devices(owner, first_seen, kind, os, os_names, compromised)


def _customers(rng: np.random.Generator, community: np.ndarray, signup_s: np.ndarray,
               communities: Communities, lam_grid: np.ndarray) -> Customers:
    n = len(community)
    age = np.clip(np.round(rng.normal(38, 12, n)), 16, 90).astype(np.int64)
    home = rng.integers(0, len(P.REGIONS), len(communities.shock_s))[community]
    region = np.where(rng.random(n) < P.HOME_REGION_SHARE, home,
                      rng.integers(0, len(P.REGIONS), n))
    club = _draw(rng, np.asarray(P.CLUB_SHARE), n)
    primary = communities.device_offset[community] + (
        rng.random(n) * communities.device_count[community]).astype(np.int64)
    life_end = signup_s + _seconds(rng.exponential(P.LIFETIME_MEAN_DAYS, n))
    shock = communities.shock_s[community]
    hit = (signup_s < shock) & (shock != P.NEVER) & (rng.random(n) < P.SHOCK_HIT)
    delay = _seconds(rng.exponential(P.SHOCK_DELAY_MEAN_DAYS, n))
    shock_stop = np.where(hit, np.where(hit, shock, 0) + delay, P.NEVER)
    end = np.minimum(np.minimum(life_end, shock_stop), P.SPAN_S)
    lam_start = intensity_at(lam_grid, signup_s)
    lam_span = intensity_at(lam_grid, end) - lam_start
    rate = rng.gamma(P.RATE_SHAPE, 1.0 / P.RATE_SHAPE, n) * np.asarray(P.CLUB_RATE)[club]
    rate *= np.where(age < P.YOUNG_AGE, P.YOUNG_RATE, 1.0)
    return Customers(community, signup_s, age, region, club, primary, life_end, shock_stop,
                     end, lam_start, lam_span, rate)


def _community_stop_p(taste: np.ndarray, articles: Articles) -> np.ndarray:
    """Chance that one purchase of a community's member stops the member."""
    n_groups = taste.shape[1]
    weighted = np.bincount(articles.group, articles.popularity * articles.stop_p, n_groups)
    return taste @ (weighted / articles.group_tickets)


def _rate_scale(base: np.ndarray, stop_p: np.ndarray, target: int) -> float:
    r"""The ``s`` with ``sum_c (1 - exp(-s base_c p_c)) / p_c = target``.

    A customer with ``Poisson(m)`` candidate purchases who stops after each
    with probability ``p`` makes ``(1 - exp(-m p)) / p`` purchases on average.
    """
    def expected(s: float) -> float:
        return float(np.sum(-np.expm1(-s * base * stop_p) / stop_p))

    lo, hi = 1e-6, 1e6
    if expected(hi) < target:
        raise ValueError(f"transactions={target:,} is too many for {len(base):,} customers: "
                         "quality churn stops them first; ask for more customers")
    for _ in range(80):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if expected(mid) < target else (lo, mid)
    return float(np.sqrt(lo * hi))
