"""The constants of the synthetic retail story (see :mod:`rdl.datasets.synthetic_retail`).

Every number the generator uses lives here, under the name the story's
formulas use, so that the documentation, the generator and the tests that
measure the planted signal all read the same values.
"""
from __future__ import annotations

import numpy as np

# Bump when the generated tables change, so cached copies are regenerated.
VERSION = 1

# Time: two calendar years; times are whole seconds since START.
START = np.datetime64("2023-01-01T00:00:00", "s")
SPAN_DAYS = 731
SPAN_S = SPAN_DAYS * 86_400
START_WEEKDAY = 6  # 2023-01-01 is a Sunday (Monday = 0)

# Sizes, from the number of transactions N.
TRANSACTIONS_PER_CUSTOMER = 25  # H&M: 31.8M transactions, 1.36M customers
CUSTOMERS_PER_COMMUNITY = 25
TRANSACTIONS_PER_ARTICLE = 200
CUSTOMERS_PER_MERCHANT = 100
DEVICES_PER_CUSTOMER = 0.6
MIN_TRANSACTIONS = 10_000
MIN_CUSTOMERS = 50
MIN_ARTICLES = 100

# Customers.
LAUNCH_SHARE, LAUNCH_DAYS = 0.35, 30.0  # share signing up in the first days
CLUB_STATUS = ("ACTIVE", "PRE-CREATE", "LEFT CLUB")
CLUB_SHARE = (0.6, 0.3, 0.1)
CLUB_RATE = (1.3, 1.0, 0.6)  # purchase-rate multiplier per club status
YOUNG_AGE, YOUNG_RATE = 30, 1.2  # customers under 30 buy 1.2x as often
RATE_SHAPE = 2.0  # purchase-rate weight ~ Gamma(shape 2, mean 1)
LIFETIME_MEAN_DAYS = 2000.0
REGIONS = ("north", "south", "east", "west", "central", "coast", "mountain", "islands")
HOME_REGION_SHARE = 0.9

# Communities.
TASTE_CONCENTRATION = 0.3  # Dirichlet concentration of a community's product-group taste
TASTE_SHARE = 0.7  # share of purchases drawn from the community's taste
TASTE_SLOTS = 256  # the purchase-group mix is rounded to 256ths (a lookup table)
FAVOURITE_MERCHANTS = 3
FAVOURITE_MERCHANT_SHARE = 0.6
PRIMARY_DEVICE_SHARE = 0.75
SHOCK_SHARE = 0.7  # communities hit by a shock
SHOCK_FIRST_DAY = 60.0
SHOCK_HIT = 0.8  # members (signed up before the shock) who stop after it
SHOCK_DELAY_MEAN_DAYS = 60.0

# Articles.
PRODUCT_GROUPS = (
    "Garment Upper body", "Garment Lower body", "Garment Full body", "Underwear", "Socks & Tights",
    "Shoes", "Accessories", "Swimwear", "Nightwear", "Cosmetic", "Bags", "Items",
)
GROUP_SHARE = (0.22, 0.16, 0.10, 0.10, 0.06, 0.07, 0.10, 0.05, 0.04, 0.03, 0.04, 0.03)
GROUP_PRICE = (25.0, 30.0, 40.0, 12.0, 8.0, 45.0, 10.0, 20.0, 18.0, 9.0, 28.0, 6.0)
PRICE_SIGMA = 0.35
COLOURS = ("Black", "White", "Blue", "Grey", "Beige", "Red", "Green", "Pink", "Yellow", "Brown")
SECTIONS = ("Ladieswear", "Menswear", "Divided", "Kids")
POPULARITY_SIGMA = 1.0
POPULARITY_TICKETS = 8  # popularity = 1 + floor(8 * LogNormal(0, 1)) whole tickets
STOP_INTERCEPT, STOP_SLOPE = -6.5, 2.5  # p_stop(a) = sigmoid(STOP_INTERCEPT - STOP_SLOPE * q_a)

# Merchants and devices.
MERCHANT_CATEGORIES = ("flagship", "outlet", "department_store", "online_partner", "franchise")
COUNTRIES = ("SE", "DE", "UK", "FR", "ES", "IT", "NL", "PL")
DEVICE_TYPES = ("mobile", "desktop", "tablet")
DEVICE_TYPE_SHARE = (0.6, 0.3, 0.1)
OS_BY_TYPE = {"mobile": ("ios", "android"), "desktop": ("windows", "macos", "linux"),
              "tablet": ("ios", "android")}
FIRST_SEEN_JITTER_DAYS = 2.0

# Seasonality of the purchase intensity f(d).
SEASON_AMPLITUDE, SEASON_PEAK_DAY = 0.25, 350.0
WEEKEND_RATE = 1.25

# Purchases.
SALE_SHARE, SALE_FACTOR = 0.2, 0.7
CHANNELS = ("store", "online", "app")
CHANNEL_SHARE = (0.5, 0.3, 0.2)
FRAUD_CHANNEL_SHARE = (0.3, 0.4, 0.3)
PRICE_LOG_SD = 0.15  # every price paid is list * sale * LogNormal(mu, 0.15)
FRAUD_PRICE_LOG_MEAN = 0.15  # mu: 0 for ordinary purchases, 0.15 for fraud

# Fraud.
FRAUD_BASE = 0.003
DEVICE_COMPROMISED_SHARE, DEVICE_FRAUD = 0.05, 0.40
MERCHANT_COMPROMISED_SHARE, MERCHANT_FRAUD = 0.03, 0.15
REPORT_SHARE = 0.9
REPORT_MIN_DAYS, REPORT_SHAPE, REPORT_SCALE_DAYS = 1.0, 2.0, 5.0

# No repeats (repeats=False): a purchase of an article its customer already
# bought is redrawn (same taste and popularity) up to this many times, then dropped.
REPEAT_REDRAWS = 8

# The wide schema (wide=True): ten more event tables, each with a little signal.
LEAVE_LEAD_DAYS = 60.0  # "before leaving": the last days before a customer's stop
RETURN_INTERCEPT, RETURN_SLOPE = -2.5, 1.0  # p_return(a) = sigmoid(-2.5 - 1.0 q_a)
RETURN_MIN_DAYS, RETURN_SHAPE, RETURN_SCALE_DAYS = 2.0, 2.0, 4.0
RETURN_REASONS = ("quality", "size", "changed_mind", "late_delivery")
QUALITY_REASON_INTERCEPT, QUALITY_REASON_SLOPE = -1.5, 1.5  # sigmoid(-1.5 - 1.5 q_a)
OTHER_REASON_SHARE = (0.5, 0.35, 0.15)  # size, changed_mind, late_delivery
REVIEW_SHARE, REVIEW_MIN_DAYS, REVIEW_DELAY_MEAN_DAYS = 0.12, 1.0, 7.0
REVIEW_MEAN, REVIEW_SLOPE = 3.5, 0.8  # rating = clip(round(3.5 + 0.8 q_a + N(0, 1)), 1, 5)
VOTES_MEAN, VOTE_DELAY_MEAN_DAYS = 1.5, 10.0
HELPFUL_BASE, HELPFUL_PER_STAR = 0.4, 0.1  # P(helpful) = 0.4 + 0.1 |rating - 3|
TICKET_DAYS = 180.0  # one support ticket per 180 days of a customer's life, on average
TICKET_LEAVING_MEAN = 0.3  # extra tickets in the LEAVE_LEAD_DAYS before a customer stops
TICKET_TOPICS = ("delivery", "payment", "product", "account")
TICKET_TOPIC_SHARE = (0.35, 0.2, 0.3, 0.15)
MESSAGES_MEAN, MESSAGES_LEAVING_MEAN, MESSAGE_DAYS = 1.5, 2.0, 7.0  # 1 + Poisson per ticket
MESSAGE_WORDS, AGENT_SHARE = 30.0, 0.5  # 1 + Poisson(30) words; share written by agents
# per purchase: views of its article just before it; browsing views over the active life
VIEWS_OF_PURCHASE, VIEWS_BROWSING, VIEW_LEAD_DAYS = 0.3, 1.0, 7.0
VIEW_SECONDS = 40.0  # dwell ~ 1 + Exponential(40 s)
WISH_SHARE, WISH_LEAD_DAYS, WISHES_BROWSING = 0.08, 30.0, 0.1
SESSIONS_PER_PURCHASE = 0.7  # over the active life
AFTER_LEAVING_ACTIVITY = 0.3  # browsing and sessions go on after leaving, at this rate
SESSION_MINUTES, SESSION_LEAVING_FACTOR = 6.0, 0.8  # mean; shorter before leaving
NEWSLETTER_FIRST_DAY, NEWSLETTER_EVERY_DAYS, NEWSLETTER_OPEN_DAYS = 10.0, 30.0, 2.0
NEWSLETTER_OPEN = (0.35, 0.25, 0.15)  # P(open): active, before leaving, after leaving
NEWSLETTER_CLICK = 0.2
MOVE_DAYS, MOVE_BEFORE_LEAVING = 700.0, 0.1  # address changes; a move before leaving

# Generation: customers per internal block. Blocks, not write chunks, fix the
# random streams, so the tables do not depend on chunk_size.
BLOCK_CUSTOMERS = 4096
NEVER = np.iinfo(np.int64).max  # "not compromised" / "no shock"
