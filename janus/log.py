"""Logging under the `janus` logger, topics chosen by `JANUS_LOG`.

`JANUS_LOG=guards,graphs,fallbacks` (or `all`) enables those topics; each
event is one line naming the function and the user's file:line.
"""
from __future__ import annotations

import logging
import os
import sys

TOPICS = ("guards", "graphs", "fallbacks", "recursion", "state")
logger = logging.getLogger("janus")


def _enabled() -> set[str]:
    raw = os.environ.get("JANUS_LOG", "")
    names = {t.strip() for t in raw.split(",") if t.strip()}
    return set(TOPICS) if "all" in names else names & set(TOPICS)


_ENABLED = _enabled()
if _ENABLED and not logger.handlers:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("janus[%(topic)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def log(topic: str, message: str) -> None:
    if topic in _ENABLED:
        logger.info(message, extra={"topic": topic})
