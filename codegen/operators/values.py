"""Values of generated builders that every operator family shares: what is a symbolic
tensor, and the value of a local before its first assignment."""
from __future__ import annotations

import collections.abc

import tensorflow as tf
from tensorflow.python.framework.ops import EagerTensor

from codegen.errors import Reason, StagingError
from codegen.operators.context import active, current

# The class itself, not `type(tf.constant(0))`: creating a tensor at import would initialise
# TensorFlow's runtime, after which the user can no longer configure devices.
EAGER = EagerTensor

# Code objects of every function a compiled builder defines: a function made from one of them
# while tracing (a helper the user's function defines) shares the builder's own variables, so
# its free variables are the build's current values, not state from outside.  Each maps to the
# globals of the user's function the builder was made from: the builder itself is compiled in a
# namespace of its own, and a global the helper names is the user's module's.
BUILDER_CODE: dict = {}
# The user's own closure cells a builder shares (`compiler._compile_builder`), by id: a function
# the builder made that closes over one of them reads outside state there, not a build variable.
USER_CELLS: dict = {}
# Code of a function a builder's lowered code defines (a lambda) -> a weak reference to the user
# function the builder was made from: a name the lambda's source reads from that function's
# closure is looked up there (the lowered lambda reads it by name, not through a cell of its own).
BUILDER_PARENT: dict = {}


def builders_own_cell(fn, name):
    """The cell of `name` when `fn` was made by a builder while tracing: it holds the build's
    current value of a variable of the function being built (a loop variable, say)."""
    if fn.__code__ in BUILDER_CODE and name in fn.__code__.co_freevars:
        cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
        return None if id(cell) in USER_CELLS else cell     # (a cell of the user's: outside state)
    return None


def lexical(fn, name):
    """The function whose closure `name` is read from for `fn`: `fn` itself, or, for a function
    a builder's lowered code made (a lambda) that has no cell of that name, the user's function
    it was written in, where the name is one of its free variables."""
    while name not in fn.__code__.co_freevars and fn.__code__ in BUILDER_PARENT:
        parent = BUILDER_PARENT[fn.__code__]()
        if parent is None or parent is fn:
            break
        fn = parent
    return fn


def user_globals(fn) -> dict:
    """The globals `fn`'s names are looked up in, as in eager: the user's module's, also for a
    function a builder made (whose `__globals__` is the builder's namespace)."""
    return BUILDER_CODE.get(fn.__code__) or fn.__globals__


def user_module(fn) -> str:
    return user_globals(fn).get("__name__") or getattr(fn, "__module__", None) or ""


def is_symbolic(x) -> bool:
    """A graph tensor (not an eager one)."""
    return isinstance(x, tf.Tensor) and type(x) is not EAGER


def is_composite(x) -> bool:
    """A composite tensor (ragged, sparse, per-replica) that a graph takes by its component
    tensors, as tf.function takes it; variables, datasets and iterators are composite tensors
    too, but janus reads them as the objects they are."""
    return isinstance(x, tf.__internal__.CompositeTensor) and not isinstance(
        x, (tf.Variable, tf.data.Dataset, tf.data.Iterator))


class _Marker:
    """A value of generated code with one instance per class (compared with `is`)."""

    _instance = None

    def __new__(cls):
        if cls.__dict__.get("_instance") is None:
            cls._instance = super().__new__(cls)
        return cls._instance


class Undefined(_Marker):
    """The value of a local before its first assignment, in generated code."""

    def __repr__(self):
        return "UNDEF"

    def __bool__(self):
        raise UnboundLocalError("janus: a variable is read before it is assigned on this path")


UNDEF = Undefined()


def refuse_undefined(*values):
    """Stop the build when user code reads `UNDEF`: a variable with no value on some path, or
    one a tensor `if` leaves with values the graph cannot merge (None on one side, a tensor on
    the other).  Eager's answer (`r is None`, `isinstance(r, tf.Tensor)`) depends on the side
    taken, or eager raises; the call runs in Python."""
    if any(isinstance(v, Undefined) for v in values):
        current().fail("undefined-value", "a variable read here has no value on some path, or a value whose "
                       "type depends on a tensor branch", "give it a value of one type on every path")


class NoReturn(_Marker):
    """The result of a function that has not reached a `return` yet, in generated code.

    A `tf.cond` whose one side returned and whose other did not carries the result with a
    zero placeholder on the side that did not; `returned` guards that the placeholder is never
    what the function gives back."""

    def __repr__(self):
        return "NO_RETURN"


NO_RETURN = NoReturn()


class EitherKind:
    """A recursion's result that is a Python number on some calls and a tensor on others, left to
    be decided after the run (the graph speculated one kind too often wrongly): its value and a
    bool tensor "a Python number".  It can only leave the graph as it is (returned, or stored
    unchanged); anything else the function does with it fails the build."""

    __slots__ = ("tensor", "python", "ptype")

    def __init__(self, tensor, python, ptype):
        self.tensor, self.python, self.ptype = tensor, python, ptype

    def _used(self, *_, **__):
        raise StagingError(Reason(
            "recursion-kind", current().user_line(),
            "a recursion's result that is a Python number on some calls and a tensor on "
            "others is used inside the function; which one only the run tells",
            "return the result as it is, or return the same kind of value from every `return`"))


for _name in ("str", "repr", "format", "bool", "int", "float", "index", "len", "iter", "getitem", "hash",
              "tf_tensor", "neg", "pos", "abs", "invert", "lt", "le", "gt", "ge", "eq", "ne") + tuple(
        f"{r}{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
                              "xor", "lshift", "rshift") for r in ("", "r")):
    setattr(EitherKind, f"__{_name}__", EitherKind._used)
del _name


class OutsideValue:
    """A value a Python call inside the graph returns that no tensor can carry (a dict, an
    object): the graph only has it after its run, so any use of it while building stops the
    build, and the statement that uses it runs in Python."""

    __slots__ = ("type_name", "where")

    def __init__(self, type_name: str, where: str):
        self.type_name, self.where = type_name, where

    def refuse(self, *_):
        ctx = active()
        where = ctx.user_line() if ctx is not None else self.where
        raise StagingError(Reason("python-call", where or self.where, f"the `{self.type_name}` a Python call "
                                  f"inside the graph returns ({self.where}) is used; the graph has it only after "
                                  "its run", "it runs in Python between graph segments"))

    __bool__ = __len__ = __iter__ = __getitem__ = __getattr__ = __hash__ = __eq__ = __str__ = __repr__ = refuse
    __format__ = __contains__ = __call__ = __index__ = __int__ = __float__ = refuse


DICT_VIEWS = (collections.abc.KeysView, collections.abc.ValuesView, collections.abc.ItemsView)


def is_iterator(value) -> bool:
    """An iterator (a generator, `zip`, `map`, `iter(...)`): walking it uses it up."""
    try:
        return hasattr(type(value), "__next__") and iter(value) is value
    except Exception:           # noqa: BLE001 - an object whose iter() fails walks nothing
        return False
