"""The structure-driven machine: a recursion over trees whose control depends only on the trees.

TreeRNN's `encode(node)` is the model: `if node.is_leaf(): return leaf(node)`,
else call itself on `node.left` and `node.right` and combine their results.
Which block a frame runs is then a fact about its node, known before any
tensor is computed, and every node is one frame.  So the machine needs no
call stack and no program counter: it classifies every node once (leaf path
or calling path, from the branch tests on the node's own columns), finds the
children each calling node passes, numbers the levels (from the depths the
tree walk recorded, where the tables show that schedule is eager's, else
bottom-up in a loop: a leaf is level 0, a calling node one above its highest
child; `_schedule`), and then runs
  - each leaf path once, batched over all its nodes, and
  - one `tf.while_loop` step per level: gather the children's results into
    the calling nodes' temporaries, run the blocks after the calls batched
    over the nodes of that level, scatter their results -
the TF Fold / DyNet schedule, derived from the user's blocks.  A balanced
tree of depth d takes d steps, and the gradient runs the same loop backwards.

What fits (`why_not`), checked on the blocks: one function; one tree
parameter, the others the same in every call; one call group, of calls on
attributes of the node; before it, only branches without statements whose
test reads the node's own columns; after the calls and on each leaf path, a
chain of blocks without branches ending in a return; no stateful op (a node
reached twice runs once).  Anything else runs as the wavefront machine.
Only nodes the roots reach run.  A call on None (a `None` child, or a root
that is None) reads the result row after the last node, which the chain of
`if node is None:` fills once, where the recursion starts with that test;
otherwise a calling path that meets a `None` child fails the run (a gather
at -1), so the call runs in Python and raises as eager does.
"""
from __future__ import annotations

import ast
import functools

import tensorflow as tf

from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.guards import check
from codegen.operators.trees import DEPTH, Pointer
from codegen.recursion.blocks import (Machine, block_reads, block_vars, is_bare, op_count, ops_since, range_assert,
                                      read_guards, run_builder, run_frames)
from codegen.recursion.frame_specs import leaves, pack
from codegen.recursion.frames import cast, cast_all, dense, empty, positions, scatter, take
from codegen.recursion.kinds import kind_guard
from codegen.syntax.analysis import assigned_names
from codegen.syntax.templates import JN

def _class_test(test, param) -> bool:
    """`type(node) is C`, `type(node) is not C` or `isinstance(node, C)`, with `C` a name: the
    tables' class column (`node_classes`), as the merged overrides of a method test it."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        return _type_of(test.left, param) and bool(_global(test.comparators[0]))
    if _operator(test) == "compare_chain" and len(test.args) == 3 and isinstance(test.args[0], ast.Constant) \
            and test.args[0].value in (("is",), ("is not",)) \
            and all(isinstance(a, ast.Lambda) for a in test.args[1:]):      # (`a is b` inside `or`, lowered)
        return _type_of(test.args[1].body, param) and bool(_global(test.args[2].body))
    return (isinstance(test, ast.Call) and _global(test.func) == "isinstance" and len(test.args) == 2
            and _is_name(test.args[0], param) and _global(test.args[1]) and not test.keywords)


def _type_of(e, param) -> bool:
    """`type(node)`: `jn.ld('type')(node)`, or `jn.call(jn.ld('type'), node)` as a lowered chain
    writes it."""
    if isinstance(e, ast.Call) and _operator(e) == "call" and len(e.args) == 2 and not e.keywords:
        return _global(e.args[0]) == "type" and _is_name(e.args[1], param)
    return (isinstance(e, ast.Call) and _global(e.func) == "type" and len(e.args) == 1 and not e.keywords
            and _is_name(e.args[0], param))


def _operator(e) -> str | None:
    """The name of the `jn` operator `e` calls, or None."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) \
            and e.func.value.id == JN:
        return e.func.attr
    return None


def _global(e) -> str | None:
    """The name a global read (`jn.ld('C')`, as the lowering writes it) reads, or None."""
    if _operator(e) == "ld" and len(e.args) == 1 and isinstance(e.args[0], ast.Constant):
        return e.args[0].value
    return None


def _is_name(e, name) -> bool:
    return isinstance(e, ast.Name) and e.id == name


_STRUCTURAL = (ast.Name, ast.Load, ast.Attribute, ast.Call, ast.Compare, ast.Is, ast.IsNot, ast.Eq, ast.NotEq,
               ast.Constant, ast.UnaryOp, ast.Not)


class _Shape:
    """The blocks of a fitting cycle: its routes, the call group, the chain after the calls."""

    def __init__(self, f, cf, param, routes, group, post):
        self.f, self.cf, self.param = f, cf, param
        self.routes = routes        # [(tests: [(branch block, outcome)], chain of blocks or None for the call)]
        self.group = group          # the call group block
        self.post = post            # the blocks after the calls, ending in a return


def why_not(m: Machine, calls) -> str | None:
    """Why the cycle does not run level by level, or None (see the module docstring)."""
    shape = _shape(m, calls)
    return shape if isinstance(shape, str) else None


def _shape(m: Machine, calls):
    if len(m.cycle.functions) != 1:
        return "several functions recurse together"
    (f, cf), = m.cycle.functions.items()
    trees = [p for p in cf.params if p in cf.tree_params]
    if len(trees) != 1 or not all(isinstance(args[cf.params.index(trees[0])], Pointer) for args in calls):
        return "it does not walk one tree parameter"
    param = trees[0]
    if any((f, q) in m.index for q in cf.params if q != param):
        return "a parameter besides the tree changes from call to call"
    if m.stateful:
        return "a block has stateful ops"
    if any(param in assigned_names(b.stmts) for b in cf.blocks):
        return f"`{param}` is reassigned"
    groups = [b for b in cf.blocks if isinstance(b.term, CallGroup)]
    if len(groups) != 1 or not is_bare(groups[0]):
        return "the recursive calls are not one group of calls on the node's children"
    group = groups[0]
    for call in group.term.calls:
        arg = call.args[cf.params.index(param)] if len(call.args) == len(cf.params) else None
        if m.cycle.names[f][call.callee] is not f or not (
                isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == param):
            return "a recursive call is not on an attribute of the node"
    routes: list = []
    why = _routes(cf, param, group, cf.entry, [], routes, 0)
    if why:
        return why
    post = _chain(cf, group.term.resume)
    if post is None:
        return "the code after the recursive calls branches or recurses again"
    return _Shape(f, cf, param, routes, group, post)


def _routes(cf, param, group, bid, tests, out, depth):
    """Collect the routes from block `bid` (to the call group, or down a leaf chain)."""
    block = cf.blocks[bid]
    if block is group:
        out.append((tests, None))
        return None
    if isinstance(block.term, Branch) and is_bare(block) and depth < 8:
        if not _structural(block.term.test, param):
            return "a branch before the recursive calls tests more than the node's own columns"
        return (_routes(cf, param, group, block.term.if_true, tests + [(block, True)], out, depth + 1)
                or _routes(cf, param, group, block.term.if_false, tests + [(block, False)], out, depth + 1))
    chain = _chain(cf, bid)
    if chain is None:
        return "a path without recursive calls branches on computed values"
    out.append((tests, chain))
    return None


def _chain(cf, bid):
    """The blocks from `bid` along gotos to a return, or None if a branch or a call comes first."""
    chain = []
    while len(chain) <= len(cf.blocks):
        block = cf.blocks[bid]
        chain.append(block)
        if isinstance(block.term, Return):
            return chain
        if not isinstance(block.term, Goto):
            return None
        bid = block.term.target
    return None


def _structural(test, param) -> bool:
    if isinstance(test, ast.BoolOp):
        return all(_structural(v, param) for v in test.values)
    if _class_test(test, param):
        return True
    for node in ast.walk(test):
        if not isinstance(node, _STRUCTURAL):
            return False
        if isinstance(node, ast.Name) and node.id != param:
            return False
        if isinstance(node, ast.Call) and (node.args or node.keywords or not isinstance(node.func, ast.Attribute)):
            return False
        if isinstance(node, ast.Attribute) and not isinstance(node.value, ast.Name):
            return False                      # the node's own columns only, not a child's
    return True


def run(m: Machine, calls, limit) -> list:
    """Build the level-by-level machine for the root calls `calls`; returns their results."""
    shape = _shape(m, calls)
    f, cf = shape.f, shape.cf
    at = cf.params.index(shape.param)
    tables = calls[0][at].tables
    n = tf.shape(tables.columns[tables.schema.columns[0].name][1])[0]
    none_chain = _none_chain(shape)
    every_root = tf.stack([tf.cast(args[at].index, tf.int32) for args in calls])
    roots = every_root if none_chain is None else tf.boolean_mask(every_root, every_root >= 0)
    route = _route(m, shape, n)
    to_calls = [r for r, (_, chain) in enumerate(shape.routes) if chain is None]
    calling = tf.equal(route, to_calls[0]) if len(to_calls) == 1 else tf.reduce_any(
        tf.stack([tf.equal(route, r) for r in to_calls] + [tf.zeros([n], tf.bool)]), 0)
    children = _children(m, shape, tables, calling, n)
    reached, level, walked = _schedule(shape, tables, roots, calling, children, n, none_chain is not None)
    # Row n holds the result of a call on None (a child or a root that is None), where the
    # recursion starts with `if node is None:` and its chain (see `_none_chain`).
    results = [tf.zeros([n + 1, *s.shape], s.dtype) for s in leaves(m.returns[f])]
    ran, reads = {}, {}
    inner = tf.reduce_sum(tf.cast(tf.logical_and(reached, calling), tf.int32))
    if none_chain is not None:
        before = op_count()
        results = _run_chain(m, shape, none_chain, tf.fill([1], -1), {shape.param: [tf.fill([1], -1)]}, results,
                             ran, some=True, rows=tf.fill([1], n))
        none_calls = _none_calls(every_root, reached, calling, children)
        for block in none_chain:
            ran[block.id] = none_calls
        for var in block_reads(ops_since(before)):
            reads.setdefault(var, []).append(none_calls)
    for r, (tests, chain) in enumerate(shape.routes):
        if chain is not None and chain is not none_chain:
            idx = _where(tf.logical_and(reached, tf.equal(route, r)))
            before = op_count()
            results = _run_chain(m, shape, chain, idx, {shape.param: [idx]}, results, ran)
            for var in block_reads(ops_since(before)):
                reads.setdefault(var, []).append(tf.size(idx))
    height = tf.reduce_max(tf.concat([tf.gather(level, roots), [0]], 0))
    key = tf.where(tf.logical_and(reached, calling), level, 0)     # the step each calling node runs at

    def body(step, results):
        idx = _where(tf.equal(key, step))
        vals = _receive(m, shape, idx, children, results, n if none_chain is not None else None)
        before = op_count()
        results = _run_chain(m, shape, shape.post, idx, vals, results, {}, some=True)
        for var in block_reads(ops_since(before)):
            reads.setdefault(var, []).append(inner)
        return step + 1, results

    _, results = tf.while_loop(lambda step, _: step <= height, body, (tf.constant(1), results))
    frames = tf.reduce_sum(tf.cast(reached, tf.int32))
    counts = [ran.get(b.id, inner if (b is shape.group or b in shape.post) else frames) for b in cf.blocks]
    with tf.control_dependencies([check(height <= limit, [
            "recursion deeper than the interpreter's recursion limit", limit])] + read_guards(reads)
            + kind_guard(m.kinds, m.post, m.roots, m.kind, lambda g: counts[g], m.kind_assumption)):
        results = [tf.identity(r) for r in results]
    m.ctx.observe(m.cycle.observe, [height, frames, tf.stack([tf.cast(c, tf.int32) for c in counts]),
                                     walked])
    # One Unpack per leaf (its gradient one Pack), not a slice and a slice gradient per root.
    per_root = [tf.unstack(take(r, _none_row(every_root, n, none_chain)), num=len(calls)) for r in results]
    return [pack(m.returns[f], [leaf[i] for leaf in per_root]) for i in range(len(calls))]


def _where(mask):
    return tf.cast(positions(mask), tf.int32)


def _direct(m: Machine, shape: _Shape, block, idx):
    """The terminator value of a block without statements, computed once on the frames of the
    nodes `idx` (only on nodes that reach the block: a test or call may read an attribute that
    other nodes lack, and that read fails the run)."""
    table_vars, _ = block_vars(m, shape.f, shape.cf, block)
    rows = {v: [idx] if v == shape.param else [] for v in table_vars}
    _, term = run_builder(m, shape.f, shape.cf, block, table_vars, [], [t for v in table_vars for t in rows[v]])
    return term


def _route(m: Machine, shape: _Shape, n):
    """Per node, the number of the route its branch tests choose."""
    tests: dict = {}
    route = tf.fill([n], -1)
    for r, (path, _) in enumerate(shape.routes):
        mask = None                     # (every node reaches the first test)
        for i, (block, outcome) in enumerate(path):
            key = (block.id, tuple((b.id, o) for b, o in path[:i]))
            if key not in tests:
                idx = tf.range(n) if mask is None else _where(mask)
                test = tf.broadcast_to(tf.cast(_direct(m, shape, block, idx), tf.bool), tf.shape(idx))
                tests[key] = test if mask is None else tf.scatter_nd(tf.expand_dims(idx, 1), test, [n])
            taken = tests[key] if outcome else tf.logical_not(tests[key])
            mask = taken if mask is None else tf.logical_and(mask, taken)
        route = tf.where(tf.ones([n], tf.bool) if mask is None else mask, r, route)
    return route


def _children(m: Machine, shape: _Shape, tables, calling, n) -> list:
    """Per call of the group, the node each calling node passes (-1 for the other nodes)."""
    at = shape.cf.params.index(shape.param)
    columns = tables.columns
    names = [call.args[at].attr for call in shape.group.term.calls]
    if all(name in columns and columns[name][0].pointer and name + "?" not in columns for name in names):
        # Every call passes a child column that every node has: the column itself, where the node calls.
        return [tf.where(calling, columns[name][1], -1) for name in names]
    idx = _where(calling)
    term = _direct(m, shape, shape.group, idx)
    return [tf.tensor_scatter_nd_update(tf.fill([n], -1), tf.expand_dims(idx, 1),
                                        tf.broadcast_to(tf.cast(args[at].index, tf.int32), tf.shape(idx)))
            for args in term]


def _schedule(shape: _Shape, tables, roots, calling, children, n, none_children: bool):
    """Which nodes the roots reach, the step at which each calling node runs (`_levels`), and
    whether the walk's depths gave them.

    Most recursions over trees follow every child and call on every node that has one: then
    every node of the tables is reached, and the walk that numbered the nodes has already
    given each its depth, deeper than its parent's.  Running the deepest calling nodes first
    (step = D - depth, D one more than the deepest calling node's depth) is then a schedule
    where every child's result is ready before its parent's step, with one step per level of
    the tallest tree, and needs no loop.  The facts are checked on the tables, and where one
    fails (a child column the calls skip holds a node, a node with children does not call, a
    node shared between trees, a root the calls do not start from) the spreading loop decides."""
    pointers = {c.name for c in tables.schema.columns if c.pointer and not c.name.endswith("()")}
    follows = {call.args[shape.cf.params.index(shape.param)].attr for call in shape.group.term.calls}
    if DEPTH not in tables.columns or not follows <= pointers:
        reached, level = _levels(roots, calling, children, n, none_children)
        return reached, level, tf.constant(False)
    depth = tables.columns[DEPTH][1]
    followed = [tables.columns[name][1] for name in sorted(follows)]
    has_child = tf.reduce_any(tf.stack([c >= 0 for c in followed]), 0)
    started = tf.tensor_scatter_nd_update(tf.zeros([n], tf.bool), tf.expand_dims(roots, 1),
                                          tf.ones_like(roots, tf.bool))
    facts = [tf.logical_or(tf.logical_not(has_child), calling), tf.logical_or(depth > 0, started)]
    facts += [tf.logical_or(c < 0, tf.gather(depth, tf.maximum(c, 0)) > depth) for c in followed]
    facts += [tables.columns[name][1] < 0 for name in sorted(pointers - follows)]
    fits = tf.reduce_all(tf.stack(facts))

    def walked():
        top = tf.reduce_max(tf.concat([tf.boolean_mask(depth, calling), [-1]], 0)) + 1
        return tf.ones([n], tf.bool), tf.where(calling, top - depth, 0)

    reached, level = tf.cond(fits, walked, lambda: _levels(roots, calling, children, n, none_children))
    return reached, level, fits


def _levels(roots, calling, children, n, none_children: bool):
    """Which nodes the roots reach, and each node's level (leaves 0, callers one above their
    highest child): one loop that spreads both until neither changes.  `none_children`: a
    child may be None (-1), which is no node, and whose result is ready before the loop."""
    def spread(reached, level, _):
        more = reached
        hit = _where(tf.logical_and(reached, calling))
        for child in children:
            below = tf.gather(child, hit)
            if none_children:
                below = tf.boolean_mask(below, below >= 0)
            more = tf.tensor_scatter_nd_update(more, tf.expand_dims(below, 1), tf.ones_like(below, tf.bool))
        below = [tf.gather(level, tf.maximum(c, 0)) for c in children]
        if none_children:
            below = [tf.where(c >= 0, b, 0) for c, b in zip(children, below)]
        highest = tf.reduce_max(tf.stack(below), 0)
        new = tf.where(calling, highest + 1, 0)
        return more, new, tf.logical_or(tf.reduce_any(tf.not_equal(more, reached)),
                                        tf.reduce_any(tf.not_equal(new, level)))

    start = tf.tensor_scatter_nd_update(tf.zeros([n], tf.bool), tf.expand_dims(roots, 1), tf.ones_like(roots, tf.bool))
    reached, level, _ = tf.while_loop(lambda r, lv, changed: changed, spread,
                                      (start, tf.zeros([n], tf.int32), tf.constant(True)))
    return reached, level


def _none_chain(shape: _Shape):
    """The chain a call on None runs, when the recursion's first test is `node is None` and its
    true side leads straight to a chain; else None (a None child then fails the run)."""
    for tests, chain in shape.routes:
        if len(tests) == 1 and tests[0][1] and chain is not None and _is_none_test(tests[0][0].term.test, shape.param):
            return chain
    return None


def _is_none_test(test, param) -> bool:
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.left, ast.Name) and test.left.id == param
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)


def _none_calls(roots, reached, calling, children):
    """How many calls on None eager makes: None roots, and None children of the calling nodes."""
    callers = tf.logical_and(reached, calling)
    counts = [tf.reduce_sum(tf.cast(roots < 0, tf.int32))]
    counts += [tf.reduce_sum(tf.cast(tf.logical_and(callers, child < 0), tf.int32)) for child in children]
    return tf.add_n(counts)


def _none_row(nodes, n, none_chain):
    """The result rows of `nodes`: a None node (-1) reads row n where a None chain fills it."""
    return nodes if none_chain is None else tf.where(nodes < 0, n, nodes)


def _receive(m: Machine, shape: _Shape, idx, children, results, none_row=None) -> dict:
    """The frame values of the calling nodes `idx` after their calls: the node, and each call's
    temporary holding the result of the child it passed (row `none_row` for a None child)."""
    vals = {shape.param: [idx]}
    views = [dense(r) for r in results]                         # once per step, for every call
    for call, child in zip(shape.group.term.calls, children):
        below = tf.gather(child, idx)
        if none_row is not None:
            below = tf.where(below < 0, none_row, below)
        specs = leaves(m.specs[(shape.f, call.target)])
        vals[call.target] = [cast(tf.gather(r, below), spec) for r, spec in zip(views, specs)]
    return vals


def _run_chain(m: Machine, shape: _Shape, chain, idx, vals, results, ran, some=False, rows=None):
    """Run the blocks of `chain` on the frames `idx`, batched, as one function of a frame; its
    return fills their results.  `vals` holds the frames' values of the variables set before the
    chain (the node, the calls' temporaries): every block before a chain is bare, so nothing
    else is set, and the values pass from block to block inside the function.  `some`: `idx` is
    never empty (every level below the highest root has a node), so it needs no `tf.cond`.
    `rows`: the result rows the frames fill, when they are not `idx` (the None row)."""
    f, cf = shape.f, shape.cf
    k = tf.size(idx)
    given = list(vals)
    for block in chain:
        ran[block.id] = k

    checks: list = []           # whether the frame's Python ints fit (`exact_ints`), if a block checks

    def per_frame(frame_vals):
        local = dict(zip(given, _split(m, f, given, frame_vals[1:])))
        found: list = []
        for block in chain:
            table_vars, written = block_vars(m, f, cf, block)
            flat = [leaf for v in table_vars for leaf in local.get(v) or _zeros(m, f, v)]
            out, term = run_builder(m, f, cf, block, table_vars, written, flat, found)
            local.update(zip(written, _split(m, f, written, out)))
        value = term if block.term.value is not None else 0
        checks[:] = [functools.reduce(tf.logical_and, found)] if found else []
        return [], cast_all(value, m.returns[f]) + checks

    def none():
        return [], [empty(s) for s in leaves(m.returns[f])] + [tf.zeros([0], tf.bool) for _ in checks]

    flat = [idx] + [leaf for v in given for leaf in vals[v]]
    _, term = run_frames(m, f, chain, per_frame, flat, k, none, not some)
    if checks:
        with tf.control_dependencies([range_assert(m, term.pop())]):
            term = [tf.identity(t) for t in term]
    at = idx if rows is None else rows
    return [scatter(r, at, cast(t, s)) for r, t, s in zip(results, term, leaves(m.returns[f]))]


def _split(m: Machine, f, names, flat) -> list:
    """`flat`, the leaves of the variables `names` in order, as one list of leaves per variable."""
    out, at = [], 0
    for v in names:
        n = len(m.index[(f, v)])
        out.append(list(flat[at:at + n]))
        at += n
    return out


def _zeros(m: Machine, f, v) -> list:
    """One frame's value of a variable not set yet on its path: the zeros of a fresh table row."""
    return [tf.zeros(m.leaf_specs[j].shape, m.leaf_specs[j].dtype) for j in m.index[(f, v)]]
