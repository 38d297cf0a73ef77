"""A graph holds the objects it was specialised on weakly, where Python allows.

A graph keeps what it was specialised on: an object argument (the guard's `args[0] is O5`), the
holders of the attributes it checks, reads at the call and writes back, the objects its identity
checks compare with, constants of its result.  Held strongly, any object a program passes to a
speculated function would live as long as the function: for ever for a module's function; and a
method speculated in its class keeps a table of per-instance functions as long as the class
lives, so an instance would keep itself alive through its own graphs.  As `tf.function` keys its
traces on weak references to such objects, `weaken` puts one `Weak` reference, after a build, in
every place that holds an object argument or an object the checks reach from one
(`args[0].child`: a child may point back at its parent), and in the copies an items check
compares with, for such objects and for the items of lists reached from an argument.

The entry guard calls a weak constant: a freed object reads as None, and the guard rejects the
call.  The checks and the write-back read through `held`.  A run holds them all strongly from its
guard to the end of its write-back (`GraphArtifact.weak`), as eager's frames hold what a call
reads: a write-back may drop the last other reference to an object the result hands back.
"""
from __future__ import annotations

import dataclasses
import types
import weakref

from codegen.assumptions import Kind, Weak
from codegen.graph.signature import Feed, Signature


def weaken(sig: Signature, checks: list, built: dict) -> tuple[Signature, list, list]:
    """`sig` and `checks` with the object arguments, and the objects the checks reach from them,
    held weakly, and so in the result template and the write-back plan in `built`
    (`build._build_graph`'s); and the references made."""
    weak = _Weakener()
    roots = {str(leaf.path) for leaf in sig.leaves if leaf.kind is Feed.OBJECT and weak.add(
        leaf.value.__self__ if type(leaf.value) is types.MethodType else leaf.value)}  # (a method: its object)
    if not roots:
        return sig, checks, []
    for check in checks:
        if _from(check.source, roots):
            weak.add(check.holder)
            if check.kind is Kind.ID_MATCH:
                weak.add(check.expected)
    leaves = [dataclasses.replace(leaf, value=weak.method(leaf.value) if type(leaf.value) is types.MethodType
                                  else weak(leaf.value)) if leaf.kind is Feed.OBJECT else leaf for leaf in sig.leaves]
    checks = [dataclasses.replace(c, holder=weak(c.holder), expected=weak(c.expected) if c.kind is Kind.ID_MATCH
                                  else weak.items(c.expected, _from(c.source, roots))
                                  if c.kind is Kind.ITEMS_MATCH else c.expected)
              for c in checks]
    built["template"] = weak.template(built["template"])
    built["plan"] = weak.plan(built["plan"])
    return dataclasses.replace(sig, leaves=leaves), checks, list(weak.refs.values())


def _from(source, roots: set) -> bool:
    """Whether `source` is reached from one of the paths `roots` (`args[0][1]`: an object in an
    argument list is a root of its own)."""
    while source is not None:
        if str(source) in roots:
            return True
        source = getattr(source, "parent", None)
    return False


class _Weakener:
    """The `Weak` reference of each object to hold weakly (`refs`, by id), put in its places."""

    def __init__(self):
        self.refs: dict[int, Weak] = {}

    def add(self, obj) -> bool:
        """Hold `obj` weakly, if Python allows; whether it is."""
        if id(obj) not in self.refs:
            try:
                self.refs[id(obj)] = Weak(obj)
            except TypeError:
                return False
        return True

    def __call__(self, obj):
        ref = self.refs.get(id(obj))
        return ref if ref is not None and ref() is obj else obj

    def method(self, method):
        """A bound method argument (a new object per lookup), held as a `weakref.WeakMethod` where
        its object is held weakly."""
        return weakref.WeakMethod(method) if id(method.__self__) in self.refs else method

    def items(self, expected, every: bool):
        """The copy of a tuple, list or dict an items check compares with, its items (a dict's
        values) weak: those held weakly elsewhere, or `every` one Python allows (the list is
        reached from an argument: its items may point back at it).  `entry_guard._same_item`
        compares a weak item by what it refers to."""
        def item(value):
            return self(value) if not every or not self.add(value) else self.refs[id(value)]
        if type(expected) in (list, tuple):
            return type(expected)(map(item, expected))
        if type(expected) is dict:
            return {k: item(v) for k, v in expected.items()}
        return expected

    def plan(self, plan: list) -> list:
        """A write-back plan: the object of an attribute write, the holder of a list or dict
        written back or that container itself, a value written.  A shadow's copies were for the
        build alone, and may hold anything the list held then."""
        out = []
        for entry in plan:
            if entry[0] in ("extend", "replace", "dict", "keyed"):
                sh = entry[1]
                sh.real, sh.copy, sh.snapshot = self(sh.real), None, None
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
