"""Templates that stand for one object in several places of a run's results and writes.

`writeback.flatten` gives an object met twice in one build the same template object; `share`
marks each such template `("shared", slot, [template])`, so `writeback.unflatten` makes that
object once per call and hands the same one to every place (a list returned and also stored on
`self` is one list after the run, as in eager).
"""
from __future__ import annotations


_SHAREABLE = {"list", "tuple", "namedtuple", "dict", "subclass", "object", "composite", "either", "method",
              "collection"}


def _parts(template) -> list:
    tag = template[0]
    if tag in ("list", "tuple"):
        return template[1]
    if tag in ("namedtuple", "dict", "composite", "collection"):
        return template[2]
    if tag == "object":
        return list(template[2].values())
    if tag == "subclass":
        return template[3]
    if tag == "method":
        return [template[2]]
    return []


def share(template, plan_entries: list):
    """`template` and `plan_entries` with every template that stands for one object in several
    places (flatten gave it to each) marked `("shared", slot, [template])`; as they are when
    nothing is shared (the common case pays nothing after the run)."""
    counts: dict = {}
    roots = [template] + [t for entry in plan_entries for t in _entry_templates(entry)]
    stack = list(reversed(roots))
    while stack:
        t = stack.pop()
        counts[id(t)] = n = counts.get(id(t), 0) + 1
        if n == 1:
            stack += _parts(t)
    shared = {key for key, n in counts.items() if n > 1}
    if not shared:
        return template, plan_entries
    done: dict = {}

    def mark(t):
        if id(t) in done:
            return done[id(t)]
        if id(t) in shared and (t[0] in _SHAREABLE or (t[0] == "tensor" and t[2] is not None)):
            box: list = []
            done[id(t)] = new = ("shared", len(done), box)
            box.append(_with_parts(t, [mark(p) for p in _parts(t)]))
            return new
        done[id(t)] = new = _with_parts(t, [mark(p) for p in _parts(t)])
        return new
    return mark(template), [_entry_with(entry, mark) for entry in plan_entries]


def _with_parts(template, parts):
    tag = template[0]
    if tag in ("list", "tuple"):
        return (tag, parts)
    if tag in ("namedtuple", "dict", "composite", "collection"):
        return (tag, template[1], parts)
    if tag == "object":
        return (tag, template[1], dict(zip(template[2], parts)))
    if tag == "subclass":
        return (tag, template[1], template[2], parts)
    if tag == "method":
        return (tag, template[1], parts[0])
    return template


def _entry_templates(entry) -> list:
    if entry[0] == "dict":
        return list(entry[2].values())
    if entry[0] == "keyed":
        return [t for pair in entry[2] for t in pair]
    return [entry[-1]] if entry[0] not in ("extend", "replace") else [entry[2]]


def _entry_with(entry, mark):
    if entry[0] == "dict":
        return (entry[0], entry[1], {k: mark(t) for k, t in entry[2].items()}, entry[3])
    if entry[0] == "keyed":
        return (entry[0], entry[1], [(mark(k), mark(t)) for k, t in entry[2]])
    if entry[0] in ("extend", "replace"):
        return (entry[0], entry[1], mark(entry[2]))
    return (*entry[:-1], mark(entry[-1]))
