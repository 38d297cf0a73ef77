"""The graphs of a per-instance function hold its instance weakly.

A class keeps one speculated function per instance (`janus.instances`), each function keeps its
graphs, and a graph keeps what it was specialised on: the instance as an argument leaf, as the
holder of the attributes it reads and writes back, as the value of an identity check, as a value
it hands back.  Held strongly there, an instance whose method built a graph could never be freed.
`weaken` puts one `Weak` reference in each of those places: the entry guard calls it (a gone
instance rejects the call), the checks and the write-back read it through `held`.
"""
from __future__ import annotations

import dataclasses

from codegen.assumptions import Kind, Weak
from codegen.graph.signature import Signature


def weaken(owner, sig: Signature, checks: list, built: dict) -> tuple[Signature, list]:
    """`sig` and `checks` with `owner`, and the objects the checks reach from it, held weakly; so
    in the result template and the write-back plan in `built` (`build._build_graph`'s)."""
    refs = {id(owner): Weak(owner)}
    roots = {str(leaf.path) for leaf in sig.leaves if leaf.value is owner}     # (a segment's: any argument)
    for check in checks:
        if _root(check.source) in roots:       # (`args[0].child`: a child may point back at it)
            for obj in (check.holder, check.expected if check.kind is Kind.ID_MATCH else None):
                if id(obj) not in refs and obj is not None:
                    try:
                        refs[id(obj)] = Weak(obj)
                    except TypeError:
                        pass
    weak = _Weakener(refs)
    leaves = [dataclasses.replace(leaf, value=weak(leaf.value)) for leaf in sig.leaves]
    checks = [dataclasses.replace(c, holder=weak(c.holder), expected=weak(c.expected) if c.kind is Kind.ID_MATCH
                                  else _weak_items(c.expected) if c.kind is Kind.ITEMS_MATCH
                                  and _root(c.source) in roots else c.expected)
              for c in checks]
    built["template"] = weak.template(built["template"])
    built["plan"] = weak.plan(built["plan"])
    return dataclasses.replace(sig, leaves=leaves), checks


def _weak_items(expected):
    """The copy of a list, tuple or dict an `ITEMS_MATCH` check compares with, its items (a dict's
    values) held weakly where they can be: a list of children pointing back at the instance
    (`entry_guard._same_item` compares a weak item by what it refers to)."""
    def weak(item):
        try:
            return Weak(item)
        except TypeError:
            return item
    if type(expected) in (list, tuple):
        return type(expected)(map(weak, expected))
    if type(expected) is dict:
        return {k: weak(v) for k, v in expected.items()}
    return expected


def _root(source) -> str:
    """The argument or global `source` is reached from."""
    while getattr(source, "parent", None) is not None:
        source = source.parent
    return str(source)


class _Weakener:
    """Puts the `Weak` reference of each object of `refs` (id -> reference) in its place."""

    def __init__(self, refs: dict):
        self.refs = refs

    def __call__(self, obj):
        ref = self.refs.get(id(obj))
        return ref if ref is not None and ref() is obj else obj

    def plan(self, plan: list) -> list:
        """A write-back plan: the object of an attribute write, the holder of a list or dict
        written back or that container itself, a value written."""
        out = []
        for entry in plan:
            if entry[0] in ("extend", "replace", "dict"):
                sh = entry[1]
                sh.real = self(sh.real)
                if sh.holder is not None:
                    sh.holder = (sh.holder[0], self(sh.holder[1]), sh.holder[2])
                out.append(entry[:2] + tuple(self.template(part) for part in entry[2:]))
            else:
                out.append((entry[0], self(entry[1])) + entry[2:-1] + (self.template(entry[-1]),))
        return out

    def template(self, template):
        """A result or write-back template (nested tuples, lists and dicts) with the constants
        among them weak (`writeback.unflatten` reads them through `held`)."""
        if type(template) is tuple and len(template) == 2 and template[0] == "const":
            return ("const", self(template[1]))
        if type(template) in (tuple, list):
            return type(template)(self.template(t) for t in template)
        if type(template) is dict:
            return {k: self.template(t) for k, t in template.items()}
        return template
