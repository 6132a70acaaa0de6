r"""synthetic_retail: an H&M-like shop generated from a seed, with planted relational signal.

Six tables, from 10 thousand to 100 million transactions::

    customers(customer_id, signup_date, age, region, club_status)
    articles(article_id, product_group, colour, section, price)                  static
    devices(device_id, first_seen, device_type, os)
    merchants(merchant_id, category, country)                                    static
    transactions(transaction_id, customer_id -> customers, article_id -> articles,
                 device_id -> devices, merchant_id -> merchants, t_dat, price, channel, is_fraud)
    fraud_reports(report_id, transaction_id -> transactions, device_id -> devices,
                  merchant_id -> merchants, reported_at)

``python -m rdl.datasets.synthetic_retail --transactions 10M --out DIR [--format duckdb]``
writes them; ``rdl.connect("synthetic_retail")`` generates 200k transactions once
(cached under ``$RDL_HOME``) and reads them. Ready tasks: ``configs/retail_churn.yaml``,
``configs/retail_fraud.yaml``, ``configs/retail_recommendation.yaml``, and on the
other shapes below ``configs/retail_churn_{small,norepeat,wide,small_norepeat}.yaml``
and ``configs/retail_recommendation_norepeat.yaml``.

Options (arguments of :func:`generate`, flags of the command line, and the
query of the bundled name, as in ``rdl.connect("synthetic_retail?transactions=25k&
repeats=false")`` or ``data.source:`` of a config, generated once per set of
options under ``$RDL_HOME``):

* ``transactions`` (``--transactions``): about how many purchases (10k to 100M).
* ``customers``, ``articles`` (``--customers``, ``--articles``): replace the
  counts derived from ``transactions`` (below); ``transactions=25k`` alone is
  a small shop of 1k customers (``configs/retail_churn_small.yaml``), and
  ``customers=1000, transactions=40k, articles=5k`` one where each customer
  buys more from a larger catalogue (with ``repeats=false``:
  ``configs/retail_churn_small_norepeat.yaml``).
* ``repeats=False`` (``--no-repeats``): no customer buys the same article
  twice, like a ratings database where no user rates an item twice (see
  *No repeats*). Every other part of the story is unchanged.
* ``wide=True`` (``--wide``): ten more event tables around the customer, four
  of them two hops away (see *Wide schema*).
* ``seed`` (``--seed``): the same seed and options give identical tables.

The generative story
--------------------
Constants are in :mod:`rdl.datasets.retail.params` under the names used here;
:func:`ground_truth` returns every hidden variable, for checking a model against
the truth. Times run over two years from 2023-01-01 (``SPAN_DAYS = 731``) and
are whole seconds. ``N`` is the requested number of transactions.

**Sizes.** ``C = max(50, N/25)`` customers (H&M has 23 transactions per
customer) in ``K = max(2, C/25)`` hidden communities (community weights
``~ Gamma(2, 1)``), ``A = max(100, N/200)`` articles, ``M = max(20, C/100)``
merchants, and per community ``max(1, round(0.6 * members))`` devices.
``customers`` and ``articles``, when given, replace ``C`` and ``A``; the
purchase rates are then solved for ``N`` as below. Quality churn caps a
customer at about 50 purchases on average, so more per customer is refused;
near the cap purchases crowd after signup, so stay well below it (the
derived ratio is 25).

**Customers.** Signup is uniform in the first 30 days for 35% of customers
(the launch), else uniform over the span minus 30 days. Age ``~ N(38, 12)``
clipped to [16, 90]; region is the community's home region with probability
0.9; club status ACTIVE / PRE-CREATE / LEFT CLUB with 0.6 / 0.3 / 0.1.
Purchase-rate weight ``w_c ~ Gamma(2, mean 1) * (1.3 | 1.0 | 0.6 by club)
* (1.2 if age < 30)``. Each customer stops buying for good at the earliest of

* the end of an own lifetime, ``signup + Exponential(mean 2000 days)`` (most
  customers outlive the data);
* a **community shock**: 70% of communities get a shock at a time
  ``s_k ~ U(day 60, end)``; each member who signed up before ``s_k`` is hit
  with probability 0.8 and stops at ``s_k + Exponential(mean 60 days)``. Peers
  go quiet together, and the first to go quiet announce the rest;
* a **bad article**: see quality churn below.

**Purchase times.** Intensity ``f(d) = (1 + 0.25 cos(2 pi (d - 350) / 365.25))
* (1.25 on weekends)`` on day ``d``, scaled to mean 1, with cumulative
``Lambda``. Customer ``c`` has ``Poisson(s * w_c * (Lambda(stop_c) -
Lambda(signup_c)))`` candidate purchases at times drawn from ``f`` between
signup and the stop; the scale ``s`` is solved so that the expected number of
purchases kept (after quality churn) is ``N``. The realised count is within
about 10% of ``N`` at 10k transactions and 2% from 50k on.

**Articles and taste.** An article has a product group (12 H&M groups), colour,
section, price ``= group price * LogNormal(0, 0.35)``, a hidden popularity of
``1 + floor(8 * LogNormal(0, 1))`` tickets and a hidden **quality**
``q_a ~ N(0, 1)``. Community ``k`` has a taste ``t_k ~ Dirichlet(0.3)`` over
groups. A member's purchase draws its group from ``0.7 t_k + 0.3 g`` (``g``:
the groups' shares of all tickets; the mix is rounded to 256ths), then an
article of that group with probability proportional to its tickets.

**Quality churn.** After buying article ``a`` the customer stops for good with
probability ``p_stop(a) = sigmoid(-6.5 - 2.5 q_a)`` (0.15% at ``q = 0``, 1.8%
at ``q = -1``, 18% at ``q = -2``); later candidate purchases are dropped.
Quality is no column: it shows only in what the *other* buyers of an article
did afterwards.

**Devices and merchants.** A purchase uses the customer's primary device with
probability 0.75, else a uniform device of the community (devices are shared
within communities; ``first_seen`` is the community's first signup minus up
to 2 days). It goes to one of the community's 3 favourite merchants with
probability 0.6, else to a merchant drawn by popularity
(``1 + floor(8 * LogNormal(0, 1))`` tickets).

**Fraud.** 5% of devices are compromised at a time uniform between
``first_seen`` and the end; 3% of merchants at a time uniform from day 30. A
purchase at time ``t`` is fraud with probability::

    1 - (1 - 0.003) (1 - 0.40 [t >= compromised(device)]) (1 - 0.15 [t >= compromised(merchant)])

(1-3% overall, rising as compromises accumulate). Fraud leaves weak traces in
the row itself: channel store / online / app with 0.3 / 0.4 / 0.3 (others
0.5 / 0.3 / 0.2), and price paid ``list price * (0.7 on sale, 20% of
purchases) * exp(mu + 0.15 Z)`` with ``mu = 0.15`` for fraud and 0 otherwise.
90% of frauds get a row in ``fraud_reports`` at ``t + 1 + Gamma(2, 5)`` days
(a chargeback) if that is before the end of the data. Event-level tasks hide
``transactions.is_fraud``, so earlier fraud reaches a model only through these
reports, and only once they are filed: after a device's first report, its
purchases are fraud about ten times as often as all others (7.0% against
0.54% at the bundled size).

**Recommendation.** What a customer buys next is their community's taste plus
popularity: the communities are hidden, but peers share devices and merchants.

**No repeats.** With ``repeats=False``, a candidate purchase of an article its
customer already bought (earlier in the customer's list) is redrawn the same
way (group by taste, article by popularity), up to ``REPEAT_REDRAWS = 8``
times, and dropped if it still repeats; quality churn is drawn afterwards.
No (customer, article) pair occurs twice, and a shop with few articles per
customer's taste ends up with fewer purchases than asked for.

**Wide schema.** With ``wide=True``, ten more event tables::

    returns(return_id, transaction_id -> transactions, returned_at, reason)
    reviews(review_id, customer_id, article_id, created_at, rating)
    review_votes(vote_id, review_id -> reviews, voted_at, helpful)
    support_tickets(ticket_id, customer_id, opened_at, topic)
    ticket_messages(message_id, ticket_id -> support_tickets, sent_at, from_agent, words)
    page_views(view_id, customer_id, article_id, viewed_at, seconds)
    wishlists(wish_id, customer_id, article_id, added_at)
    app_sessions(session_id, customer_id, device_id, started_at, minutes)
    newsletter_opens(open_id, customer_id, opened_at, clicked)
    addresses(address_id, customer_id, created_at, region)

so a customer has eight child tables and four more two hops away (with
``fraud_reports``). A customer *leaves* at the end of its purchases (its stop
time or the purchase that stops it, if within the data); "before leaving"
means the 60 days before (``LEAVE_LEAD_DAYS``). Each table carries a little
signal:

* a purchase is returned with probability ``sigmoid(-2.5 - q_a)`` (7.6% at
  ``q = 0``) ``2 + Gamma(2, 4)`` days later, for reason ``quality`` with
  probability ``sigmoid(-1.5 - 1.5 q_a)``, else size / changed_mind /
  late_delivery (0.5 / 0.35 / 0.15): quality shows directly;
* 12% of purchases are reviewed ``1 + Exponential(7)`` days later with rating
  ``clip(round(3.5 + 0.8 q_a + N(0, 1)), 1, 5)``; a review gets
  ``Poisson(1.5)`` votes ``Exponential(10)`` days later, helpful with
  probability ``0.4 + 0.1 |rating - 3|``;
* support tickets arrive at one per 180 days of active life, plus
  ``Poisson(0.3)`` more before leaving; a ticket has ``1 + Poisson(1.5)``
  messages (``1 + Poisson(2)`` before leaving) within 7 days;
* each purchase is preceded by ``Poisson(0.3)`` views of its article in the 7
  days before, and 8% of purchased articles were wishlisted in the 30 days
  before (intent shows before the purchase);
* *activity* over the active life, ``Poisson(m)`` events per customer at
  uniform times with ``m`` per purchase of the customer: browsing views of
  taste-drawn articles (``m = 1``), wishes of taste-drawn articles
  (``m = 0.1``) and app sessions on the primary device (``m = 0.7``,
  ``Exponential(6)`` minutes, 0.8 times that before leaving); after leaving,
  activity goes on at 0.3 times the same rate per day (``AFTER_LEAVING_ACTIVITY``);
* a newsletter goes out every 30 days from day 10; a signed-up customer opens
  it within ``Exponential(2)`` days with probability 0.35, 0.25 before
  leaving, 0.15 after (20% of opens click);
* an address at signup (the customer's region), moves at one per 700 days of
  active life, and a move before leaving for 10% of those who leave.

At the bundled size the LightGBM baseline's test AUROC on ``retail_churn``
rises from 0.78 to 0.84 with these tables, its gain spread over the recency
of views, wishes, sessions and tickets.

They are drawn per customer block from ``default_rng([seed, 2, block])``, so
the six base tables are the same with or without them.

Generation runs in blocks of 4096 customers, each from its own stream
``default_rng([seed, 1, block])`` (entities from ``default_rng([seed, 0])``),
so the rows never depend on ``chunk_size``. Rows of ``transactions`` are
grouped by customer block, not sorted by time.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl

from rdl.home import build_folder, rdl_home
from rdl.db.connect import FOLDER_SCHEMA_FILE
from rdl.datasets.retail import params
from rdl.datasets.retail.tables import WIDE_TABLES, table_specs
from rdl.datasets.retail.world import World, build_world
from rdl.datasets.retail.writer import DuckDBSink, ParquetSink, write_tables

SCHEMA_FILE = Path(__file__).with_name("synthetic_retail.yaml")
WIDE_SCHEMA_FILE = Path(__file__).with_name("synthetic_retail_wide.yaml")
DEFAULT_TRANSACTIONS = 200_000
FORMATS = ("parquet", "duckdb")
# Options of the bundled name's query, with their defaults (see ``path``).
OPTIONS = {"transactions": DEFAULT_TRANSACTIONS, "customers": None, "articles": None,
           "repeats": True, "wide": False, "seed": 0}

__all__ = ["DEFAULT_TRANSACTIONS", "OPTIONS", "SCHEMA_FILE", "WIDE_SCHEMA_FILE", "generate",
           "ground_truth", "load", "parse_options", "path"]


def generate(out: str | Path, transactions: int = 100_000, *, seed: int = 0,
             customers: int | None = None, articles: int | None = None, repeats: bool = True,
             wide: bool = False, format: str = "parquet", chunk_size: int = 1_000_000) -> Path:
    r"""Writes the synthetic retail database.

    Args:
        out (str or Path): A folder for ``format="parquet"`` (one file per
            table; existing files of these tables are replaced, and wide
            tables removed when ``wide=False``), or the DuckDB file for
            ``format="duckdb"`` (replaced if it exists).
        transactions (int): About how many transactions to generate (at
            least 10,000); the entity counts scale with it.
            (default: :obj:`100_000`)
        seed (int): Random seed; the same seed and options give identical
            tables. (default: :obj:`0`)
        customers (int, optional): Number of customers (at least 50),
            instead of ``transactions / 25``. (default: :obj:`None`)
        articles (int, optional): Number of articles (at least 100),
            instead of ``transactions / 200``. (default: :obj:`None`)
        repeats (bool): Whether a customer may buy an article again; with
            :obj:`False` no (customer, article) pair repeats.
            (default: :obj:`True`)
        wide (bool): Add the ten wide-schema event tables.
            (default: :obj:`False`)
        format (str): ``"parquet"`` or ``"duckdb"``; DuckDB tables declare
            their primary and foreign keys. (default: :obj:`"parquet"`)
        chunk_size (int): Transactions per write; memory holds about this
            many rows (and their events). It changes the row groups, never
            the rows. (default: :obj:`1_000_000`)

    Returns:
        Path: :obj:`out`. Read parquet with ``rdl.connect(out)``: parquet
        declares no keys, so the folder carries the schema file
        (``rdl_schema.yaml``, which ``rdl.connect`` reads);
        DuckDB with ``rdl.connect(out)`` for a ``.duckdb`` name or
        ``rdl.connect(f"duckdb:///{out}")``. DuckDB checks and indexes every
        foreign key on insert, so it writes about ten times slower than
        parquet; use parquet for large sizes.
    """
    return _generate(out, transactions, seed, format, chunk_size, customers=customers,
                     articles=articles, repeats=repeats, wide=wide)[0]


def ground_truth(transactions: int = 100_000, *, seed: int = 0, customers: int | None = None,
                 articles: int | None = None) -> World:
    """The hidden state behind :func:`generate`'s tables for the same arguments:
    article quality, communities, shocks, stop times and compromise times
    (``repeats`` and ``wide`` change no hidden state)."""
    _check_sizes(transactions, seed, customers, articles)
    return build_world(transactions, seed, customers, articles)


def path(transactions: int = DEFAULT_TRANSACTIONS, **options) -> Path:
    """The parquet folder of the bundled size (200k transactions, seed 0), or
    of other :func:`generate` options (``seed``, ``customers``, ``articles``,
    ``repeats``, ``wide``), generated on first use under the rdl cache directory."""
    options = {**OPTIONS, **options, "transactions": transactions}
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; valid ones are {list(OPTIONS)}")
    # no "=" in the name: readers take a "key=value" folder for a hive partition column
    changed = "-".join(f"{k}_{str(v).lower()}" for k, v in sorted(options.items())
                       if v != OPTIONS[k])
    folder = rdl_home() / (f"synthetic_retail_v{params.VERSION}"
                           + (f"-{changed}" if changed else ""))
    specs = table_specs(options["wide"])
    return build_folder(folder, lambda temp: generate(temp, **options),
                        lambda f: all((f / f"{name}.parquet").is_file() for name in specs))


def load(schema=None, **options):
    """Reads the bundled synthetic retail database as a :class:`~rdl.db.Database`:
    :func:`path`'s folder for the given ``options`` (``schema`` replaces the
    folder's schema file if given)."""
    from rdl.db.connect import connect

    return connect(path(**options), schema=schema)


def parse_options(query: str) -> dict:
    """Options from the query of a bundled name, ``"customers=1000&repeats=false"``
    -> ``{"customers": 1000, "repeats": False}``; counts take ``50k`` too."""
    options: dict = {}
    for key, text in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key not in OPTIONS:
            raise ValueError(f"synthetic_retail has no option {key!r}; valid ones are "
                             f"{list(OPTIONS)}")
        if isinstance(OPTIONS[key], bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"synthetic_retail option {key}={text!r} must be true or false")
            options[key] = text.lower() in ("true", "1")
        else:
            options[key] = parse_count(text)
    return options


def parse_count(text: str) -> int:
    """``"10k"``, ``"1.5M"``, ``"100M"``, ``"2G"`` or ``"200_000"`` as a number."""
    match = re.fullmatch(r"\s*(\d+(?:_\d+)*(?:\.\d+)?)\s*([kKmMgG]?)\s*", str(text))
    if match is None:
        raise ValueError(f"{text!r} is not a count; write e.g. 10k, 1M, 100M or 200000")
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[match.group(2).lower()]
    value = float(match.group(1).replace("_", "")) * scale
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of rows")
    return int(value)


def _generate(out: str | Path, transactions: int, seed: int, format: str, chunk_size: int, *,
              customers: int | None = None, articles: int | None = None, repeats: bool = True,
              wide: bool = False) -> tuple[Path, dict[str, int]]:
    _check_sizes(transactions, seed, customers, articles)
    _check_int("chunk_size", chunk_size, 1)
    if format not in FORMATS:
        raise ValueError(f"format={format!r} is not supported; use one of {list(FORMATS)}")
    out = Path(out)
    if format == "duckdb" and out.is_dir():
        raise ValueError(f"out={str(out)!r} is a folder; format='duckdb' writes a file, "
                         "e.g. retail.duckdb")
    if format == "parquet" and out.exists() and not out.is_dir():
        raise ValueError(f"out={str(out)!r} is a file; format='parquet' writes a folder")
    world = build_world(transactions, seed, customers, articles)
    specs = table_specs(wide)
    sink = ParquetSink(out, specs) if format == "parquet" else DuckDBSink(out, specs)
    counts = write_tables(world, sink, chunk_size, repeats=repeats, wide=wide)
    if format == "parquet":
        _write_schema(out / FOLDER_SCHEMA_FILE, wide)
        for name in set(WIDE_TABLES) - set(specs):  # left by an earlier wide run
            (out / f"{name}.parquet").unlink(missing_ok=True)
    return out, counts


def _write_schema(target: Path, wide: bool) -> None:
    """The folder's schema file: the base tables', plus the wide ones' if ``wide``."""
    text = SCHEMA_FILE.read_text()
    if wide:  # the wide file lists more tables under the same ``tables:``
        text += WIDE_SCHEMA_FILE.read_text().split("tables:\n", 1)[1]
    target.write_text(text)


def _check_sizes(transactions: object, seed: object, customers: object,
                 articles: object) -> None:
    _check_int("transactions", transactions, params.MIN_TRANSACTIONS)
    _check_int("seed", seed, 0)
    if customers is not None:
        _check_int("customers", customers, params.MIN_CUSTOMERS)
    if articles is not None:
        _check_int("articles", articles, params.MIN_ARTICLES)


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}={value!r} must be a whole number")
    if value < minimum:
        raise ValueError(f"{name}={value:,} is too small; it must be at least {minimum:,}")


def main(argv: list[str] | None = None) -> int:
    """``python -m rdl.datasets.synthetic_retail``: generate and print row counts."""
    parser = argparse.ArgumentParser(
        prog="python -m rdl.datasets.synthetic_retail",
        description="Generate the synthetic retail database (see the module docstring).")
    parser.add_argument("--transactions", default="100k", help="about how many transactions, "
                        "e.g. 10k, 1M, 100M (default: 100k)")
    parser.add_argument("--customers", default=None,
                        help="number of customers (default: transactions / 25)")
    parser.add_argument("--articles", default=None,
                        help="number of articles (default: transactions / 200)")
    parser.add_argument("--no-repeats", action="store_true",
                        help="no customer buys the same article twice")
    parser.add_argument("--wide", action="store_true",
                        help="add ten more event tables around the customer")
    parser.add_argument("--out", required=True, help="folder (parquet) or file (duckdb)")
    parser.add_argument("--format", default="parquet", choices=FORMATS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk-size", default="1M", help="transactions per write (default: 1M)")
    args = parser.parse_args(argv)
    try:
        start = time.perf_counter()
        out, counts = _generate(
            args.out, parse_count(args.transactions), args.seed, args.format,
            parse_count(args.chunk_size),
            customers=None if args.customers is None else parse_count(args.customers),
            articles=None if args.articles is None else parse_count(args.articles),
            repeats=not args.no_repeats, wide=args.wide)
        seconds = time.perf_counter() - start
    except ValueError as exc:
        parser.error(str(exc))
    for name, rows in counts.items():
        print(f"{name:<16} {rows:>13,} rows")
    rate = counts["transactions"] / seconds
    print(f"wrote {out} ({args.format}) in {seconds:.1f} s ({rate:,.0f} transactions/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
