"""Outside dicts and lists janus keeps no copy of (an `OrderedDict`, a `defaultdict`, a list
reached through its bound `append`): their items are checked at entry, and a change the call
makes runs that statement in Python, as eagerly."""
import collections

import tensorflow as tf

import janus

CONFIG = collections.OrderedDict(lr=0.1)
GROUPS = collections.defaultdict(list)
LOG = []
EMIT = LOG.append


def reads_config(x):
    return x * CONFIG["lr"]


def appends_to_a_group(x):
    GROUPS["k"].append(1)
    return x * len(GROUPS["k"])


def emits(x):
    EMIT(7)
    return x * len(LOG)


def _compare(fn, between=lambda i: None, calls=7):
    out = []
    for f in (fn, janus.speculate(fn, profile_runs=2)):
        CONFIG["lr"] = 0.1
        GROUPS.clear()
        LOG.clear()
        run = []
        for i in range(calls):
            between(i)
            run.append((float(f(tf.constant(1.0))), dict(CONFIG), dict(GROUPS), list(LOG)))
        out.append(run)
    assert out[0] == out[1]
    return f


def test_an_ordered_dict_setting_changed_between_calls():
    spec = _compare(reads_config, between=lambda i: CONFIG.__setitem__("lr", 0.1 * (i // 3 + 1)))
    assert spec.stats()["graph_runs"] >= 3


def test_a_list_in_a_defaultdict_the_call_appends_to():
    _compare(appends_to_a_group)


def test_a_list_reached_through_its_bound_append():
    _compare(emits)


import numpy as np  # noqa: E402

ITEMS = collections.OrderedDict(a=1.0, w=np.array([1.0, 2.0]))
QUEUE = collections.deque([1.0, 2.0])
PLAIN = {"a": 1.0}
PUSH = QUEUE.append


def reads_whole(x):
    return (x * ITEMS.get("b", -1.0) + ("b" in ITEMS) + len(ITEMS) + len(QUEUE) + ("b" in PLAIN)
            + sum(v for k, v in ITEMS.items() if k != "w") + float(ITEMS["w"][0]))


def pushes(x):
    PUSH(1.0)
    return x * len(QUEUE)


def _reset():
    ITEMS.clear()
    ITEMS.update(a=1.0, w=np.array([1.0, 2.0]))
    QUEUE.clear()
    QUEUE.extend([1.0, 2.0])
    PLAIN.clear()
    PLAIN["a"] = 1.0


def _changes(i):
    if i == 4:
        ITEMS["b"] = 10.0
        ITEMS["w"][0] = 100.0
        QUEUE.append(3.0)
        PLAIN["b"] = 2.0


def test_length_membership_iteration_and_get_see_changes_between_calls():
    out = []
    for f in (reads_whole, janus.speculate(reads_whole, profile_runs=2)):
        _reset()
        run = []
        for i in range(7):
            _changes(i)
            run.append(float(f(tf.constant(1.0))))
        out.append(run)
    assert out[0] == out[1]
    assert f.stats()["graph_runs"] >= 3


def test_a_deques_bound_append_held_in_a_global():
    out = []
    for f in (pushes, janus.speculate(pushes, profile_runs=2)):
        _reset()
        out.append([(float(f(tf.constant(1.0))), len(QUEUE)) for _ in range(6)])
    assert out[0] == out[1]
