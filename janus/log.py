"""Logging under the `janus` logger, topics chosen by `JANUS_LOG`.

    JANUS_LOG=guards,graphs python train.py      # or JANUS_LOG=all

Each event is one line on stderr naming the topic, the function and the
user's file:line, then what happened:

    janus[guards] f (train.py:3): #0 BRANCH if `tf.reduce_sum(x) > 0` == True (train.py:5) failed; falling back

Topics: `guards` (entry-guard misses, in-graph guard failures), `graphs`
(builds, relaxations), `fallbacks` (eager re-runs, functions left
imperative), `recursion`, `state`.  The topic set is read once, at import;
`set_topics` changes it from code.  Records go to the standard `logging`
module, so an application can route the `janus` logger wherever it likes.
"""
from __future__ import annotations

import logging
import os
import sys

TOPICS = ("guards", "graphs", "fallbacks", "recursion", "state")
logger = logging.getLogger("janus")
_handler: logging.Handler | None = None


def parse(raw: str) -> set[str]:
    """`"guards, graphs"` -> {"guards", "graphs"}; `"all"` -> every topic; unknown names are ignored."""
    names = {t.strip().lower() for t in raw.split(",") if t.strip()}
    return set(TOPICS) if "all" in names else names & set(TOPICS)


class _TopicFilter(logging.Filter):
    def filter(self, record):
        if not hasattr(record, "topic"):
            record.topic = "-"
        return True


def set_topics(topics) -> set[str]:
    """Enable exactly `topics` (a set, or a `JANUS_LOG`-style string); returns the previous set."""
    global _ENABLED, _handler
    previous = set(_ENABLED)
    _ENABLED = parse(topics) if isinstance(topics, str) else set(topics) & set(TOPICS)
    if _ENABLED and _handler is None and not logger.handlers:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("janus[%(topic)s] %(message)s"))
        _handler.addFilter(_TopicFilter())
        logger.addHandler(_handler)
        logger.setLevel(logging.INFO)
    return previous


_ENABLED: set[str] = set()
set_topics(os.environ.get("JANUS_LOG", ""))


def enabled(topic: str) -> bool:
    return topic in _ENABLED


def subject(fn) -> str:
    """`qualname (file:line)` of a speculated or plain function: who an event is about."""
    py = getattr(fn, "python_function", fn)
    code = getattr(py, "__code__", None)
    name = getattr(fn, "__qualname__", getattr(py, "__qualname__", repr(fn)))
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else name


def log(topic: str, fn_or_message, message: str | None = None) -> None:
    """`log(topic, fn, message)`: one line naming `fn` and its file:line.
    (`log(topic, message)` is accepted too, for messages that name their subject.)"""
    if topic not in _ENABLED:
        return
    text = fn_or_message if message is None else f"{subject(fn_or_message)}: {message}"
    logger.info(text, extra={"topic": topic})
