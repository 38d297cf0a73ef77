"""The walk that numbers a batch of trees' nodes for their tables, and which objects are nodes.

The walk runs at every call that passes trees (its cost is part of each call's entry guard,
about half a microsecond a node), so it is generated once per set of child columns with one
block of code per child attribute: a loop over the child names cost a fifth more.
"""
from __future__ import annotations

import dataclasses

from profiler.library import is_user_function

from codegen.operators.tree_columns import ABSENT, LACKS, NOT_A_NODE

_NOT_NODES = frozenset({type(None), bool, int, float, str, bytes, tuple, list, dict, set})
NODE_CLASSES: dict = dict.fromkeys(_NOT_NODES, False)   # class -> whether its instances are nodes


def is_node(value) -> bool:
    """An instance of a user class: a tree node when a recursion walks it."""
    cls = type(value)
    if cls in _NOT_NODES or not hasattr(value, "__dict__"):
        return False
    known = NODE_CLASSES.get(cls)
    if known is None:
        known = not isinstance(value, type) and any(is_user_function(v) for v in vars(cls).values()) or (
            cls.__module__ not in ("builtins",) and not cls.__module__.split(".")[0] in ("tensorflow", "keras", "numpy"))
        if len(NODE_CLASSES) < 4096:
            NODE_CLASSES[cls] = known
    return known


@dataclasses.dataclass
class Walk:
    order: list         # the nodes, by row
    rows: list          # their `vars`
    depth: list         # the depth at which each was found (a root's is 0)
    index: dict         # id(node) -> row
    links: dict         # child column -> each node's child row, -1 for None, `LACKS`, `NOT_A_NODE`
    back: bool          # some child's row is not after its node's: the rows may form a cycle


def walk(roots, names: tuple) -> Walk:
    """The nodes reachable from `roots` through the child attributes `names`, each once,
    breadth-first from each root in turn (children in the order of `names`), with each node's
    child rows.  A node is numbered when first found, so its row is known when its parent's
    child attribute is read, and the rows are visited in the order they were numbered.  Only
    those attributes are followed: the graph reaches nodes through them alone."""
    fn = _WALKERS.get(names)
    if fn is None:
        fn = _WALKERS[names] = _walker(names)
    order, rows, depth, index, links, back = fn(roots)
    return Walk(order, rows, depth, index, dict(zip(names, links)), back)


_WALKERS: dict = {}

_WALK = """
def walk(roots):
    order, rows, depth, index, i, back = [], [], [], {{}}, 0, False
    {assign}
    for root in roots:
        if root is None or id(root) in index:
            continue
        index[id(root)] = len(order)
        order.append(root)
        depth.append(0)
        while i < len(order):
            node = order[i]
            rows.append(row := vars(node))
            below = depth[i] + 1
            i += 1
{children}
    return order, rows, depth, index, [{links}], back
"""

_CHILD = """
            child = row[{name}] if {name} in row else getattr(node, {name}, ABSENT)
            if child is None:
                {link}.append(-1)
            elif (j := index.get(id(child))) is not None:
                {link}.append(j)
                back = back or j < i
            elif (k := known.get(type(child))) or (k is None and is_node(child)):
                index[id(child)] = j = len(order)
                {link}.append(j)
                order.append(child)
                depth.append(below)
            else:
                {link}.append(LACKS if child is ABSENT else NOT_A_NODE)
"""


def _walker(names: tuple):
    links = [f"link{k}" for k in range(len(names))]
    assign = f"{', '.join(links)}, = {', '.join(['[]'] * len(names))}," if names else ""
    source = _WALK.format(assign=assign, links=", ".join(links),
                          children="".join(_CHILD.format(name=repr(n), link=link) for n, link in zip(names, links)))
    namespace = {"ABSENT": ABSENT, "LACKS": LACKS, "NOT_A_NODE": NOT_A_NODE, "known": NODE_CLASSES,
                 "is_node": is_node}
    exec(compile(source, "<janus tree walk>", "exec"), namespace)     # noqa: S102 - names are repr()s
    return namespace["walk"]
