"""The `jn` namespace: every operator a generated builder calls while TensorFlow traces.

A builder's one reserved name, `jn`, is bound to this package (see
`codegen.compiler`).  The operators come in families, one module each:
control flow (`if`/`for`/`while`), logical operators, state reads and
deferred writes, calls and builtins, and joined recursive calls.  Each keeps
Python's meaning on Python values (evaluated at build time, so the graph never
sees them) and gives tensors their graph meaning.
"""
from codegen.operators.builtins import TensorRange, py_iter, whole
from codegen.operators.calls import call, decorator, del_item, inplace, ld_attr, ld_item, st_item
from codegen.operators.contexts import entered
from codegen.operators.control_flow import for_stmt, if_exp, if_stmt, returned, while_stmt
from codegen.operators.general import run_while
from codegen.operators.tensor_cond import run_cond
from codegen.operators.joins import each, join, join_end, joined, listed
from codegen.operators.node_tests import receiver
from codegen.operators.logical import and_, compare_chain, eq, in_, ne, not_, not_any, not_in, or_, ready, truth
from codegen.operators.state import del_attr, del_name, ld, st_attr, st_name
from codegen.operators.values import NO_RETURN, UNDEF, Undefined, is_symbolic
from codegen.operators.text import formatted
from codegen.operators.dunders import binop, ordered, unary
from codegen.operators import int_conversion as _ints  # noqa: F401 - eager's refusal of ints past 64 bits

__all__ = [
    # control flow
    "if_stmt", "if_exp", "for_stmt", "while_stmt", "run_cond", "run_while", "TensorRange", "truth", "returned",
    # logical
    "and_", "or_", "not_", "not_any", "compare_chain", "ready", "eq", "ne", "in_", "not_in", "binop", "ordered", "unary",
    # state reads and writes
    "ld", "ld_attr", "ld_item", "decorator", "st_attr", "st_item", "st_name", "del_attr", "del_item", "del_name", "inplace",
    # calls, and the values f-strings format
    "call", "py_iter", "whole", "formatted", "entered",
    # joined recursive calls, and the node a recursive method call is made on
    "join", "joined", "join_end", "each", "listed", "receiver",
    # values
    "UNDEF", "Undefined", "NO_RETURN", "is_symbolic",
]
