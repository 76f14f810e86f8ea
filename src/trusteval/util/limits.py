"""Bounds shared by the run configuration (config.py) and the backends' own options (models/openai.py).

A value outside them is a typo or would hang or exhaust the machine (20,000 connections, a day-long timeout);
both places refuse it before anything is written.
"""

MAX_CONCURRENCY = 1024
MAX_TIMEOUT_S = 86_400.0
MAX_RETRIES = 100
