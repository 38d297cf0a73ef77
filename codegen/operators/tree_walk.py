"""The walk that numbers a batch of trees' nodes for their tables, and which objects are nodes.

The walk runs at every call that passes trees (its cost is part of each call's entry guard,
about half a microsecond a node), so it is generated once per set of child columns with one
block of code per child attribute: a loop over the child names cost a fifth more.
"""
from __future__ import annotations

import dataclasses
import operator
from itertools import repeat
from types import FunctionType

from profiler.library import is_user_function

from codegen.operators.tree_columns import ABSENT, LACKS, NOT_A_NODE

_NOT_NODES = frozenset({type(None), bool, int, float, str, bytes, tuple, list, dict, set})
NODE_CLASSES: dict = dict.fromkeys(_NOT_NODES, False)   # class -> whether its instances are nodes


def is_node(value) -> bool:
    """An instance of a user class: a tree node when a recursion walks it."""
    cls = type(value)
    if cls in _NOT_NODES or not cls.__dictoffset__:         # (no instance `__dict__`; hasattr could
        return False                                        # run a `__getattr__`)
    known = NODE_CLASSES.get(cls)
    if known is None:
        known = not isinstance(value, type) and any(is_user_function(v) for v in vars(cls).values()) or (
            cls.__module__ not in ("builtins",) and not cls.__module__.split(".")[0] in ("tensorflow", "keras", "numpy"))
        if len(NODE_CLASSES) < 4096:
            NODE_CLASSES[cls] = known
    return known


def nodes_of(roots):
    """The nodes reachable from `roots`, each once, depth-first from each root in turn."""
    order, index, known = [], {}, NODE_CLASSES
    for root in roots:
        stack = [root]
        while stack:
            node = stack.pop()
            if node is None or id(node) in index:
                continue
            index[id(node)] = len(order)
            order.append(node)
            children = [v for v in vars(node).values() if (k := known.get(type(v))) or (k is None and is_node(v))]
            children.reverse()
            stack += children
    return order, index


def tree_nodes(roots) -> list:
    """The nodes reachable from `roots`, each once."""
    return nodes_of(roots)[0]


def share_nodes(roots) -> bool:
    """Whether two of the trees of `roots` (different objects) share a node: fed as separate
    tables, one node would be two stand-ins, and `is` between them would differ from Python."""
    seen: set = set()
    for root in roots:
        ids = set(nodes_of([root])[1])
        if ids & seen:
            return True
        seen |= ids
    return False


def class_value(cls, name: str):
    """What Python reads for `name` on an instance of `cls` whose `__dict__` lacks it, found
    without running any code: the class attribute, `DESCRIPTOR` where reading it would call a
    `__get__` (a property, a method), `ABSENT` where no class has it (a `__getattr__` is not
    called: the graph fails that read, and the call runs in Python)."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name, ABSENT)
        if found is not ABSENT:
            return DESCRIPTOR if _defines(type(found), "__get__") else found
    return ABSENT


def method_of(classes, name: str):
    """The program's function that `name` reads as a method on instances of every class of
    `classes` (their `__dict__` lacking it), found without running code; None where some class
    has none, another one, or reads attributes through a `__getattribute__` of its own."""
    found = None
    for cls in classes:
        fn = None
        for klass in cls.__mro__:
            if klass.__dict__.get("__getattribute__", _GETATTRIBUTE) is not _GETATTRIBUTE:
                return None
            if name in klass.__dict__:
                fn = klass.__dict__[name]
                break
        if type(fn) is not FunctionType or not is_user_function(fn) or fn is not (found or fn):
            return None
        found = fn
    return found


_GETATTRIBUTE = object.__getattribute__
# A function merged from the methods the node classes define each their own way
# (`codegen.recursion.dispatch`) -> (the method's name, {class: its function}).
DISPATCHED: dict = {}


def methods_by_class(classes, name: str) -> dict | None:
    """{class: the program's function `name` reads as a method on its instances, None where the
    class has no attribute `name`}, for classes that do not all share one function; None where no
    class has one, or a class has something else under the name."""
    found = {cls: _own_method(cls, name) for cls in classes}
    if _OTHER in found.values() or len(set(found.values())) < 2 or not any(found.values()):
        return None
    return found


def _own_method(cls, name):
    fn = method_of([cls], name)
    return fn if fn is not None else None if class_value(cls, name) is ABSENT else _OTHER


_OTHER = object()


def resolves(classes, name: str, fn) -> bool:
    """Whether `name` reads `fn` on instances of every class of `classes`; for a merged function,
    the one merged for that class (None: the class has no attribute `name`)."""
    merged = DISPATCHED.get(fn)
    if merged is None:
        return method_of(classes, name) is fn
    return all(cls in merged[1] and _own_method(cls, name) is merged[1][cls] for cls in classes)


def unplain_reads(cls, names: frozenset) -> str:
    """Why reading `names` on instances of `cls` would not give what their `__dict__` (or a plain
    class attribute) holds, or "": a `__getattribute__` of the class, or a property, slot or other
    data descriptor under one of the names, which Python reads before the instance's `__dict__`."""
    key = (cls, names)
    why = _UNPLAIN.get(key)
    if why is None:
        why = ""
        for klass in cls.__mro__[:-1]:
            if "__getattribute__" in klass.__dict__:
                why = f"{klass.__qualname__} defines __getattribute__"
            for name in names & klass.__dict__.keys():
                kind = type(klass.__dict__[name])
                if _defines(kind, "__set__") or _defines(kind, "__delete__"):
                    why = f"`{name}` is a {kind.__name__} of {klass.__qualname__}, read before the node's __dict__"
        if len(_UNPLAIN) < 4096:
            _UNPLAIN[key] = why
    return why


def shadowed(rows, name: str) -> bool:
    """Whether some node's `__dict__` (of `rows`) holds `name`, which Python reads before a method
    of the node's class."""
    return any(map(operator.contains, rows, repeat(name)))


def _defines(kind: type, name: str) -> bool:
    return any(name in k.__dict__ for k in kind.__mro__)


DESCRIPTOR = object()
_UNPLAIN: dict = {}


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
            child = row[{name}] if {name} in row else class_value(type(node), {name})
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
                 "is_node": is_node, "class_value": class_value}
    exec(compile(source, "<janus tree walk>", "exec"), namespace)     # noqa: S102 - names are repr()s
    return namespace["walk"]
