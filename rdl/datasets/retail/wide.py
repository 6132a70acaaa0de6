r"""The wide schema's ten extra event tables, for one customer block.

Each adds a little signal to what the six base tables plant (the story is in
:mod:`rdl.datasets.synthetic_retail`, section *Wide schema*): returns and
reviews show article quality (quality churn); support tickets, shorter app
sessions, unopened newsletters and moves come before a customer stops
(churn); page views and wishlists come before purchases (recommendation).
Rows never precede their parents and end before ``SPAN_S``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from rdl.datasets.retail import params as P
from rdl.datasets.retail.purchases import Purchases, pick_articles, pick_codes
from rdl.datasets.retail.tables import WIDE_TABLES, name_column, time_column
from rdl.datasets.retail.world import DAY_S, World


def draw_wide(world: World, rng: np.random.Generator, bought: Purchases,
              first_ids: dict[str, int]) -> dict[str, pa.Table]:
    """The ten wide tables of one block, ids numbered from ``first_ids[table]``."""
    tables: dict[str, pa.Table] = {}
    signup = world.customers.signup_s[bought.lo:bought.hi]
    # when each block customer stops buying; NEVER if not within the data
    leave = np.where(bought.leave_s < P.SPAN_S, bought.leave_s, P.NEVER)
    quality = world.articles.quality[bought.article]
    tables["returns"] = _returns(rng, bought, quality, first_ids)
    tables["reviews"], rating, reviewed = _reviews(rng, bought, quality, first_ids)
    tables["review_votes"] = _votes(rng, tables["reviews"]["review_id"].to_numpy(), rating,
                                    reviewed, first_ids)
    tables["support_tickets"], leaving, opened = _tickets(rng, bought.lo, signup, leave,
                                                          first_ids)
    tables["ticket_messages"] = _messages(rng, tables["support_tickets"]["ticket_id"].to_numpy(),
                                          leaving, opened, first_ids)
    end = np.minimum(leave, P.SPAN_S)
    purchases = np.bincount(bought.customer - bought.lo, minlength=len(signup))
    tables["page_views"] = _views(rng, world, bought, signup, end, purchases, first_ids)
    tables["wishlists"] = _wishes(rng, world, bought, signup, end, purchases, first_ids)
    tables["app_sessions"] = _sessions(rng, world, bought.lo, signup, end, leave, purchases,
                                       first_ids)
    tables["newsletter_opens"] = _newsletters(rng, bought.lo, signup, leave, first_ids)
    tables["addresses"] = _addresses(rng, world, bought.lo, signup, leave, first_ids)
    return tables


def _returns(rng: np.random.Generator, bought: Purchases, quality: np.ndarray,
             first_ids: dict[str, int]) -> pa.Table:
    returned = np.flatnonzero(rng.random(len(quality)) < _sigmoid(
        P.RETURN_INTERCEPT - P.RETURN_SLOPE * quality))
    at = bought.t_s[returned] + _seconds(
        P.RETURN_MIN_DAYS + rng.gamma(P.RETURN_SHAPE, P.RETURN_SCALE_DAYS, len(returned)))
    bad = rng.random(len(returned)) < _sigmoid(
        P.QUALITY_REASON_INTERCEPT - P.QUALITY_REASON_SLOPE * quality[returned])
    reason = np.where(bad, 0, 1 + pick_codes(P.OTHER_REASON_SHARE, rng.random(len(returned))))
    keep = at < P.SPAN_S
    return _table("returns", first_ids, bought.transaction_id[returned][keep],
                  time_column(at[keep]), name_column(reason[keep], P.RETURN_REASONS))


def _reviews(rng: np.random.Generator, bought: Purchases, quality: np.ndarray,
             first_ids: dict[str, int]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Reviews, and their ratings and times (s)."""
    rows = np.flatnonzero(rng.random(len(quality)) < P.REVIEW_SHARE)
    at = bought.t_s[rows] + _seconds(
        P.REVIEW_MIN_DAYS + rng.exponential(P.REVIEW_DELAY_MEAN_DAYS, len(rows)))
    rating = np.clip(np.round(P.REVIEW_MEAN + P.REVIEW_SLOPE * quality[rows]
                              + rng.standard_normal(len(rows))), 1, 5).astype(np.int64)
    keep = at < P.SPAN_S
    table = _table("reviews", first_ids, bought.customer[rows][keep],
                   bought.article[rows][keep], time_column(at[keep]), pa.array(rating[keep]))
    return table, rating[keep], at[keep]


def _votes(rng: np.random.Generator, review_id: np.ndarray, rating: np.ndarray,
           reviewed: np.ndarray, first_ids: dict[str, int]) -> pa.Table:
    of = np.repeat(np.arange(len(rating)), rng.poisson(P.VOTES_MEAN, len(rating)))
    at = reviewed[of] + _seconds(rng.exponential(P.VOTE_DELAY_MEAN_DAYS, len(of)))
    helpful = rng.random(len(of)) < P.HELPFUL_BASE + P.HELPFUL_PER_STAR * np.abs(rating[of] - 3)
    keep = at < P.SPAN_S
    return _table("review_votes", first_ids, review_id[of][keep], time_column(at[keep]),
                  pa.array(helpful[keep]))


def _tickets(rng: np.random.Generator, lo: int, signup: np.ndarray, leave: np.ndarray,
             first_ids: dict[str, int]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Tickets over each customer's active life, plus extra ones just before
    a customer stops; also whether each falls in those last days, and its time (s)."""
    end = np.minimum(leave, P.SPAN_S)
    owner, at = _events_between(rng, (end - signup) / DAY_S / P.TICKET_DAYS, signup, end)
    leaves = leave != P.NEVER
    extra = np.repeat(np.arange(len(signup)),
                      rng.poisson(P.TICKET_LEAVING_MEAN, len(signup)) * leaves)
    owner = np.concatenate([owner, extra])
    at = np.concatenate([at, _before(rng, leave[extra], P.LEAVE_LEAD_DAYS, signup[extra])])
    at = np.minimum(at, P.SPAN_S - 1)
    topic = pick_codes(P.TICKET_TOPIC_SHARE, rng.random(len(owner)))
    table = _table("support_tickets", first_ids, lo + owner, time_column(at),
                   name_column(topic, P.TICKET_TOPICS))
    return table, _leaving(at, leave[owner]), at


def _messages(rng: np.random.Generator, ticket_id: np.ndarray, leaving: np.ndarray,
              opened: np.ndarray, first_ids: dict[str, int]) -> pa.Table:
    mean = np.where(leaving, P.MESSAGES_LEAVING_MEAN, P.MESSAGES_MEAN)
    of = np.repeat(np.arange(len(leaving)), 1 + rng.poisson(mean))
    at = opened[of] + _seconds(rng.random(len(of)) * P.MESSAGE_DAYS)
    agent = rng.random(len(of)) < P.AGENT_SHARE
    words = 1 + rng.poisson(P.MESSAGE_WORDS, len(of))
    keep = at < P.SPAN_S
    return _table("ticket_messages", first_ids, ticket_id[of][keep],
                  time_column(at[keep]), pa.array(agent[keep]), pa.array(words[keep]))


def _views(rng: np.random.Generator, world: World, bought: Purchases, signup: np.ndarray,
           end: np.ndarray, purchases: np.ndarray, first_ids: dict[str, int]) -> pa.Table:
    """Views of each purchase's article in the days before it, and browsing
    of taste-drawn articles (see :func:`_activity`)."""
    customer = bought.customer - bought.lo
    seen = np.repeat(np.arange(len(customer)), rng.poisson(P.VIEWS_OF_PURCHASE, len(customer)))
    viewed = _before(rng, bought.t_s[seen], P.VIEW_LEAD_DAYS, signup[customer[seen]])
    owner, browsed = _activity(rng, P.VIEWS_BROWSING * purchases, signup, end)
    article = pick_articles(world, rng, world.customers.community[bought.lo + owner])
    dwell = 1 + np.floor(rng.exponential(P.VIEW_SECONDS, len(seen) + len(owner)))
    return _table("page_views", first_ids,
                  np.concatenate([bought.customer[seen], bought.lo + owner]),
                  np.concatenate([bought.article[seen], article]),
                  time_column(np.concatenate([viewed, browsed])), pa.array(dwell.astype(np.int64)))


def _wishes(rng: np.random.Generator, world: World, bought: Purchases, signup: np.ndarray,
            end: np.ndarray, purchases: np.ndarray, first_ids: dict[str, int]) -> pa.Table:
    """Some purchased articles, wished for in the days before; and wishes of
    taste-drawn articles (see :func:`_activity`)."""
    customer = bought.customer - bought.lo
    wished = np.flatnonzero(rng.random(len(customer)) < P.WISH_SHARE)
    added = _before(rng, bought.t_s[wished], P.WISH_LEAD_DAYS, signup[customer[wished]])
    owner, browsed = _activity(rng, P.WISHES_BROWSING * purchases, signup, end)
    article = pick_articles(world, rng, world.customers.community[bought.lo + owner])
    return _table("wishlists", first_ids,
                  np.concatenate([bought.customer[wished], bought.lo + owner]),
                  np.concatenate([bought.article[wished], article]),
                  time_column(np.concatenate([added, browsed])))


def _sessions(rng: np.random.Generator, world: World, lo: int, signup: np.ndarray,
              end: np.ndarray, leave: np.ndarray, purchases: np.ndarray,
              first_ids: dict[str, int]) -> pa.Table:
    """App sessions on the primary device (see :func:`_activity`), shorter
    just before a customer stops."""
    owner, started = _activity(rng, P.SESSIONS_PER_PURCHASE * purchases, signup, end)
    minutes = rng.exponential(P.SESSION_MINUTES, len(owner)) * np.where(
        _leaving(started, leave[owner]), P.SESSION_LEAVING_FACTOR, 1.0)
    return _table("app_sessions", first_ids, lo + owner,
                  world.customers.primary_device[lo + owner], time_column(started),
                  pa.array(np.round(minutes, 2)))


def _newsletters(rng: np.random.Generator, lo: int, signup: np.ndarray, leave: np.ndarray,
                 first_ids: dict[str, int]) -> pa.Table:
    """Monthly newsletters, opened less often just before a customer stops and
    rarely after."""
    sent = _seconds(np.arange(P.NEWSLETTER_FIRST_DAY, P.SPAN_DAYS, P.NEWSLETTER_EVERY_DAYS))
    active, before, after = P.NEWSLETTER_OPEN
    gone = leave[:, None]
    p = np.where(sent >= gone, after,
                 np.where(sent > gone - _seconds(P.LEAVE_LEAD_DAYS), before, active))
    customer, campaign = np.nonzero((signup[:, None] <= sent) & (rng.random(p.shape) < p))
    at = sent[campaign] + _seconds(rng.exponential(P.NEWSLETTER_OPEN_DAYS, len(campaign)))
    clicked = rng.random(len(campaign)) < P.NEWSLETTER_CLICK
    keep = at < P.SPAN_S
    return _table("newsletter_opens", first_ids, lo + customer[keep], time_column(at[keep]),
                  pa.array(clicked[keep]))


def _addresses(rng: np.random.Generator, world: World, lo: int, signup: np.ndarray,
               leave: np.ndarray, first_ids: dict[str, int]) -> pa.Table:
    """The signup address, moves over the active life, and a move before
    leaving for some of those who stop."""
    n = len(signup)
    end = np.minimum(leave, P.SPAN_S)
    moves, moved = _events_between(rng, (end - signup) / DAY_S / P.MOVE_DAYS, signup, end)
    last = np.flatnonzero((leave != P.NEVER) & (rng.random(n) < P.MOVE_BEFORE_LEAVING))
    owner = np.concatenate([np.arange(n), moves, last])
    at = np.concatenate([signup, moved, _before(rng, leave[last], P.LEAVE_LEAD_DAYS,
                                                signup[last])])
    region = np.concatenate([world.customers.region[lo:lo + n],
                             rng.integers(0, len(P.REGIONS), len(moves) + len(last))])
    return _table("addresses", first_ids, lo + owner, time_column(np.minimum(at, P.SPAN_S - 1)),
                  name_column(region, P.REGIONS))


def _table(name: str, first_ids: dict[str, int], *columns) -> pa.Table:
    """The rows of a wide table: ids from ``first_ids[name]``, then ``columns``."""
    rows = len(columns[0])
    ids = pa.array(first_ids[name] + np.arange(rows, dtype=np.int64))
    return pa.table([ids, *columns], schema=WIDE_TABLES[name].schema)


def _events_between(rng: np.random.Generator, mean: np.ndarray, start: np.ndarray,
               end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Poisson(mean)`` events per customer at uniform times in ``[start, end)``:
    (customer in block, time in s) per event."""
    owner = np.repeat(np.arange(len(start)), rng.poisson(mean))
    return owner, start[owner] + (rng.random(len(owner)) * (end - start)[owner]).astype(np.int64)


def _activity(rng: np.random.Generator, mean: np.ndarray, signup: np.ndarray,
              end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Poisson(mean)`` events per customer at uniform times over its active
    life ``[signup, end)``, and after it, until ``SPAN_S``, at
    ``AFTER_LEAVING_ACTIVITY`` times the same rate per day."""
    active = np.maximum(end - signup, DAY_S)
    owner, at = _events_between(rng, mean, signup, end)
    later, after = _events_between(rng, mean * P.AFTER_LEAVING_ACTIVITY * (P.SPAN_S - end) / active,
                              end, np.full(len(end), P.SPAN_S))
    return np.concatenate([owner, later]), np.concatenate([at, after])


def _before(rng: np.random.Generator, t_s: np.ndarray, days: float,
            floor_s: np.ndarray) -> np.ndarray:
    """Times uniform in the ``days`` before ``t_s``, never before ``floor_s``."""
    return np.maximum(floor_s, t_s - _seconds(rng.random(len(t_s)) * days))


def _leaving(t_s: np.ndarray, leave: np.ndarray) -> np.ndarray:
    """Whether each time falls in the ``LEAVE_LEAD_DAYS`` before its customer stops."""
    return (t_s <= leave) & (t_s > leave - _seconds(P.LEAVE_LEAD_DAYS))


def _seconds(days) -> np.ndarray:
    return np.floor(np.asarray(days) * DAY_S).astype(np.int64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))
