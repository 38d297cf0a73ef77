"""Compiles lowered functions into builders: `convert(fn)` and `compile_block`.

`convert` runs the lowering pipeline once per function object, caches the
result, and compiles the builder with the user's file name and line numbers,
so a traceback from inside a builder points at the user's own source.  The
builder's one reserved name, `jn`, is bound to the `codegen.operators`
namespace.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import types
import weakref

from profiler import code_key

from codegen import operators
from codegen.operators.values import BUILDER_CODE, BUILDER_PARENT, USER_CELLS, user_globals
from codegen.lowering.pipeline import transform
from codegen.syntax.sites import SiteTable
from codegen.syntax.source import parse_function
from codegen.syntax.templates import JN


@dataclasses.dataclass
class ConvertedFunction:
    fn_ref: weakref.ref       # the user's function, weakly: the conversion cache is keyed by it
    key: str                  # the profiler's code key: facts for this function
    code: types.CodeType      # the user's code object
    filename: str
    builder: types.FunctionType
    sites: SiteTable
    source: str               # the builder, as Python text (show_code)

    @property
    def fn(self) -> types.FunctionType:
        return self.fn_ref()


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def convert(fn) -> ConvertedFunction:
    cached = _CACHE.get(fn)
    if cached is not None:
        return cached
    src = parse_function(fn)
    node = src.node
    sites = transform(node, src.filename)
    builder = _compile_builder(node, src.filename, user_globals(fn), fn)
    # The builder answers a wrong call with the user's function's own words.
    builder.__code__ = builder.__code__.replace(co_qualname=fn.__code__.co_qualname)
    builder.__qualname__ = fn.__qualname__
    builder.__defaults__ = fn.__defaults__
    builder.__kwdefaults__ = fn.__kwdefaults__
    converted = ConvertedFunction(weakref.ref(fn), code_key(fn), fn.__code__, src.filename, builder, sites,
                                  ast.unparse(node))
    _CACHE[fn] = converted
    return converted


def compile_block(cycle_function, block, fn=None) -> ConvertedFunction:
    """A machine block (see `codegen.lowering.recursion`) lowered and compiled like a function;
    `fn`: the function whose profile its sites read (the method a merged function's block comes
    from, `recursion.dispatch.origin`), by default the cycle function's."""
    fn = fn or cycle_function.fn
    node = cycle_function.block_source(block)
    sites = transform(node, cycle_function.filename)
    builder = _compile_builder(node, cycle_function.filename, user_globals(fn), fn)
    return ConvertedFunction(weakref.ref(fn), code_key(fn), fn.__code__, cycle_function.filename, builder, sites,
                             ast.unparse(node))


def _compile_builder(node: ast.FunctionDef, filename: str, globals_: dict, fn):
    """Compile a lowered function inside `def __janus_factory__(jn)`, with the user's file name and
    line numbers (tracebacks point at their source); `jn` is bound to the operators module.  The
    functions it defines read their globals from `globals_`, the user's (`values.user_globals`).
    The builder shares `fn`'s closure cells: the factory binds `fn`'s free names, so a function
    nested in the builder (left as written, converted when called) closes over the very cells
    `fn` holds (`def grad(dy): return -self.lam * dy` inside a nested `@tf.custom_gradient`)."""
    free = [n for n in fn.__code__.co_freevars if n != JN]
    bind = [ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=ast.Constant(None)) for n in free]
    factory = ast.FunctionDef(name="__janus_factory__", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=JN)], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=bind + [node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))], decorator_list=[],
        returns=None, type_params=[])
    ast.copy_location(factory, node)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    namespace = {"__builtins__": builtins}
    exec(compile(module, filename, "exec"), namespace)
    _register_nested(namespace["__janus_factory__"].__code__, globals_, fn)
    builder = namespace["__janus_factory__"](operators)
    if not free:
        return builder
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    if fn.__code__ not in BUILDER_CODE:     # (a function a builder made closes over the build's cells too)
        USER_CELLS.update((id(c), c) for c in cells.values())
    cells[JN] = types.CellType(operators)
    closure = tuple(cells.get(n) or types.CellType() for n in builder.__code__.co_freevars)
    return types.FunctionType(builder.__code__, builder.__globals__, builder.__name__, None, closure)


def _register_nested(code, globals_, fn, top=True):
    """Every function the builder defines reads its globals from `globals_`; the functions the
    lowered code itself defines (lambdas, comprehensions; not the builder) have `fn`, the user's
    function, as their enclosing one (`values.BUILDER_PARENT`)."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            BUILDER_CODE[const] = globals_
            if not top:
                BUILDER_PARENT[const] = weakref.ref(fn)
            _register_nested(const, globals_, fn, top=False)
