"""Blocks of a recursion machine that can run on all their frames at once without `tf.vectorized_map`.

A block whose statements and terminator are only arithmetic and comparisons of scalar frame
variables and number literals computes, frame by frame, the same values as elementwise ops on the
vectors of those variables.  Running its builder once on those vectors gives every frame's result
in a handful of ops, where `tf.vectorized_map` adds its own bookkeeping (index ranges, reshapes,
loop-invariant selects) around each block.  Any other construct (a call, an attribute, a
subscript, an `if`, a global name, a non-scalar variable) keeps the block on `tf.vectorized_map`.
"""
from __future__ import annotations

import ast

import tensorflow as tf

from codegen.recursion.frame_specs import Spec

_NODES = (ast.Assign, ast.Name, ast.Load, ast.Store, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare,
          ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd,
          ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


def is_elementwise(cf, f, block, specs: dict) -> bool:
    """Whether `block` of function `f` computes only elementwise on scalar, non-static frame
    variables (see the module docstring)."""
    for node in [n for s in block.stmts for n in ast.walk(s)] + [n for e in block.term.exprs() for n in ast.walk(e)]:
        if not isinstance(node, _NODES):
            return False
        if isinstance(node, ast.Assign) and not (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            return False
        if isinstance(node, ast.Compare) and len(node.ops) != 1:
            return False
        if isinstance(node, ast.Constant) and type(node.value) not in (bool, int, float):
            return False
        if isinstance(node, ast.Name) and not _scalar(specs.get((f, node.id)) if node.id in cf.vars else None):
            return False
    return True


def _scalar(spec) -> bool:
    return (isinstance(spec, Spec) and spec.shape == () and spec.tables is None and not spec.is_static
            and (spec.dtype.is_integer or spec.dtype.is_floating or spec.dtype == tf.bool))


def run_batched(per_frame, vals: list, k):
    """`per_frame` run once on the stacked frame values `vals`: its (assigned leaves, terminator
    leaves), each a vector over the `k` frames (a value no frame variable feeds is broadcast)."""
    new_leaves, term = per_frame(vals)

    def over_frames(t):
        t = tf.convert_to_tensor(t)
        return tf.fill(tf.reshape(k, [1]), t) if t.shape.rank == 0 else t
    return [over_frames(t) for t in new_leaves], [over_frames(t) for t in term]
