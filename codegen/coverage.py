"""Which Python bytecode janus converts: every opcode of `dis.opmap`, classified.

janus lowers source (ASTs), not bytecode, so an opcode is covered by the
lowering that handles the construct it is compiled from.  `HANDLERS_311` is
that registry, as data: per opcode, the construct, the lowering handlers
(`module.visit_Node`, checked to exist by the tests), and, where one helps,
a *sample* — a few lines of Python that compile to that opcode.  A sample's
status is not taken on trust: `table()` runs the real conversion pipeline on
it, so a construct that `codegen.lowering.unsupported` rejects is listed as
imperative-only with the reason kind the user would see, and it moves to
"converted" by itself once a lowering accepts it.

    python -m codegen.coverage          # the markdown table for the running Python

Statuses:
  converted          a lowering rewrites the construct into janus operators
  no conversion      the opcode keeps its Python meaning in the builder: at build
                     time it acts on Python values, or on symbolic tensors through
                     TensorFlow's own operator overloads (stack, locals, arithmetic)
  imperative-only    the function runs eagerly; the report names the line and why
"""
from __future__ import annotations

import ast
import dataclasses
import dis
import sys

from codegen.errors import ConversionError
from codegen.lowering.pipeline import transform

CONVERTED = "converted"
NO_CONVERSION = "no conversion"
IMPERATIVE = "imperative-only"

_L = "codegen.lowering."
IF = _L + "if_statements.visit_If"
IFEXP = _L + "expressions.visit_IfExp"
BOOLOP = _L + "expressions.visit_BoolOp"
NOT = _L + "expressions.visit_UnaryOp"
COMPARE = _L + "expressions.visit_Compare"
FOR = _L + "loops.visit_For"
WHILE = _L + "loops.visit_While"
BREAK = _L + "break_continue.visit_Break"
CONTINUE = _L + "break_continue.visit_Continue"
RETURN = _L + "return_statements.visit_Return"
CALL = _L + "calls.visit_Call"
NAME = _L + "calls.visit_Name"
ATTR = _L + "calls.visit_Attribute"
STATE = _L + "state_writes."
UNS = _L + "unsupported."


@dataclasses.dataclass(frozen=True)
class Handler:
    status: str                        # declared status; a sample's status is re-derived by `table()`
    construct: str                     # the Python construct the opcode comes from
    handlers: tuple[str, ...] = ()     # "codegen.lowering.<module>.visit_<Node>"
    sample: str | None = None          # module source defining `f`; compiles to the opcode


def H(status, construct, *handlers, sample=None):
    return Handler(status, construct, tuple(handlers), sample)


_GEN = "def f(x):\n    yield x\n"
_YFROM = "def f(x):\n    yield from x\n"
_ASYNC = "async def f(x):\n    await x\n"
_ASYNC_GEN = "async def f(x):\n    yield x\n"
_ASYNC_FOR = "async def f(x):\n    async for v in x:\n        pass\n"
_ASYNC_WITH = "async def f(x):\n    async with x:\n        pass\n"
_TRY = "def f(x):\n    try:\n        x = x + 1\n    except ValueError:\n        x = 0\n    return x\n"
_TRY_STAR = "def f(x):\n    try:\n        x = x + 1\n    except* ValueError:\n        x = 0\n    return x\n"
_FINALLY = "def f(x, g):\n    try:\n        x = x + 1\n    finally:\n        g()\n    return x\n"
_WITH = "def f(x, tape):\n    with tape:\n        y = x * x\n    return y\n"
_MATCH_SEQ = "def f(x):\n    match x:\n        case [a, b]:\n            return a\n    return x\n"
_MATCH_MAP = "def f(x):\n    match x:\n        case {'k': v}:\n            return v\n    return x\n"
_MATCH_CLS = "def f(x):\n    match x:\n        case int():\n            return x\n    return x\n"
_CLASS = "def f(x):\n    class Box:\n        y: int = 1\n    return x\n"
_IMPORT = "def f(x):\n    import math\n    return x\n"
_IMPORT_FROM = "def f(x):\n    from math import pi\n    return x * pi\n"

# Python 3.11 (https://docs.python.org/3.11/library/dis.html#python-bytecode-instructions).
HANDLERS_311: dict[str, Handler] = {
    # -- control flow: the heart of the conversion ------------------------------------------
    "POP_JUMP_FORWARD_IF_FALSE": H(CONVERTED, "`if` / `while` / conditional expression", IF, WHILE, IFEXP,
                                   sample="def f(x):\n    if x > 0:\n        x = -x\n    return x\n"),
    "POP_JUMP_FORWARD_IF_TRUE": H(CONVERTED, "`if not ...` / `or` in a test", IF, BOOLOP,
                                  sample="def f(x):\n    if not x > 0:\n        x = -x\n    return x\n"),
    "POP_JUMP_BACKWARD_IF_TRUE": H(CONVERTED, "`while` test at the loop's bottom", WHILE,
                                   sample="def f(x):\n    while x > 0:\n        x = x - 1\n    return x\n"),
    "POP_JUMP_BACKWARD_IF_FALSE": H(CONVERTED, "`while not ...` test at the loop's bottom", WHILE,
                                    sample="def f(x):\n    while not x > 0:\n        x = x + 1\n    return x\n"),
    "POP_JUMP_FORWARD_IF_NONE": H(CONVERTED, "`if x is not None` (a Python value: decided at build time)", IF,
                                  sample="def f(x):\n    if x is not None:\n        x = 1\n    return x\n"),
    "POP_JUMP_FORWARD_IF_NOT_NONE": H(CONVERTED, "`if x is None` (a Python value: decided at build time)", IF,
                                      sample="def f(x):\n    if x is None:\n        x = 1\n    return x\n"),
    "POP_JUMP_BACKWARD_IF_NONE": H(CONVERTED, "`while x is None` (Python value)", WHILE,
                                   sample="def f(x, g):\n    while x is None:\n        x = g()\n    return x\n"),
    "POP_JUMP_BACKWARD_IF_NOT_NONE": H(CONVERTED, "`while x is not None` (Python value)", WHILE,
                                       sample="def f(x, g):\n    while x is not None:\n        x = g(x)\n    return x\n"),
    "JUMP_IF_FALSE_OR_POP": H(CONVERTED, "`and` as a value", BOOLOP, sample="def f(a, b):\n    return a and b\n"),
    "JUMP_IF_TRUE_OR_POP": H(CONVERTED, "`or` as a value", BOOLOP, sample="def f(a, b):\n    return a or b\n"),
    "JUMP_FORWARD": H(CONVERTED, "end of an `if` branch, `break`", IF, BREAK,
                      sample="def f(x):\n    if x > 0:\n        y = x\n    else:\n        y = -x\n    return y\n"),
    "JUMP_BACKWARD": H(CONVERTED, "loop back edge, `continue`", FOR, WHILE, CONTINUE,
                       sample="def f(xs):\n    s = 0\n    for v in xs:\n        s = s + v\n    return s\n"),
    "GET_ITER": H(CONVERTED, "`for` over an iterable", FOR, sample="def f(xs):\n    for v in xs:\n        pass\n"),
    "FOR_ITER": H(CONVERTED, "`for` loop step (unrolled, or `tf.while_loop` on tensors)", FOR,
                  sample="def f(xs):\n    for v in xs:\n        pass\n"),
    "RETURN_VALUE": H(CONVERTED, "`return` (early returns become a flag and one return)", RETURN,
                      sample="def f(x):\n    if x > 0:\n        return x\n    return -x\n"),
    "UNARY_NOT": H(CONVERTED, "`not` (`tf.logical_not` on tensors)", NOT, sample="def f(x):\n    return not x\n"),
    "COMPARE_OP": H(CONVERTED, "comparisons; chains `a < b < c` become `jn.compare_chain`, `==` `jn.eq`", COMPARE,
                    sample="def f(a, b, c):\n    return a < b < c\n"),
    # -- calls and reads ----------------------------------------------------------------------
    "CALL": H(CONVERTED, "calls: user functions inlined, framework functions called on symbols", CALL,
              sample="def f(x, g):\n    return g(x)\n"),
    "PRECALL": H(CONVERTED, "call preparation", CALL, sample="def f(x, g):\n    return g(x)\n"),
    "KW_NAMES": H(CONVERTED, "keyword arguments of a call", CALL, sample="def f(x, g):\n    return g(x, k=1)\n"),
    "CALL_FUNCTION_EX": H(CONVERTED, "calls with `*args` / `**kwargs`", CALL,
                          sample="def f(g, a):\n    return g(*a)\n"),
    "PUSH_NULL": H(NO_CONVERSION, "stack slot before a called function"),
    "LOAD_GLOBAL": H(CONVERTED, "global / builtin read (entry guard on identity or value)", NAME,
                     sample="def f(x):\n    return tf.abs(x)\n"),
    "LOAD_DEREF": H(CONVERTED, "closure-cell read (entry guard)", NAME,
                    sample="def outer(c):\n    def f(x):\n        return x + c\n    return f\n"),
    "LOAD_CLASSDEREF": H(IMPERATIVE, "free name read in a class body", UNS + "visit_ClassDef"),
    "LOAD_ATTR": H(CONVERTED, "attribute read (`jn.ld_attr`, guarded)", ATTR, sample="def f(o):\n    return o.w\n"),
    "LOAD_METHOD": H(CONVERTED, "method lookup for a call", ATTR, CALL, sample="def f(o):\n    return o.m()\n"),
    "MAKE_FUNCTION": H(NO_CONVERSION, "nested `def`, `lambda`, comprehension: a Python value at build time",
                       sample="def f(x):\n    g = lambda v: v + 1\n    return g(x)\n"),
    # -- state writes -------------------------------------------------------------------------
    "STORE_ATTR": H(CONVERTED, "attribute write (deferred until the graph succeeded)", STATE + "visit_Assign",
                    sample="def f(o, x):\n    o.h = x\n"),
    "DELETE_ATTR": H(CONVERTED, "`del o.a` (deferred)", STATE + "visit_Delete", sample="def f(o):\n    del o.h\n"),
    "STORE_SUBSCR": H(CONVERTED, "item write on an outside object (deferred)", STATE + "visit_Assign",
                      sample="def f(d, x):\n    d['k'] = x\n"),
    "DELETE_SUBSCR": H(CONVERTED, "`del d[k]` on an outside object (deferred)", STATE + "visit_Delete",
                       sample="def f(d):\n    del d['k']\n"),
    "STORE_GLOBAL": H(CONVERTED, "`global g; g = ...` (deferred)", STATE + "visit_Global",
                      sample="def f(x):\n    global G\n    G = x\n"),
    "DELETE_GLOBAL": H(CONVERTED, "`global g; del g` (deferred)", STATE + "visit_Global",
                       sample="def f():\n    global G\n    del G\n"),
    "STORE_DEREF": H(CONVERTED, "`nonlocal` write (deferred); a local captured by a closure needs nothing",
                     STATE + "visit_Assign",
                     sample="def outer():\n    c = 0\n    def f(x):\n        nonlocal c\n        c = x\n    return f\n"),
    "DELETE_DEREF": H(CONVERTED, "`nonlocal c; del c` (deferred)", STATE + "visit_Delete",
                      sample="def outer():\n    c = 0\n    def f():\n        nonlocal c\n        del c\n    return f\n"),
    # -- locals, constants, the stack: Python's own meaning in the builder --------------------
    "LOAD_FAST": H(NO_CONVERSION, "local read"),
    "STORE_FAST": H(NO_CONVERSION, "local write (a branch or loop output when lowered)"),
    "DELETE_FAST": H(NO_CONVERSION, "`del` of a local", sample="def f(x):\n    y = x\n    del y\n    return x\n"),
    "LOAD_CONST": H(NO_CONVERSION, "constant"),
    "LOAD_CLOSURE": H(NO_CONVERSION, "cell passed to a nested function"),
    "MAKE_CELL": H(NO_CONVERSION, "frame setup for cells"),
    "COPY_FREE_VARS": H(NO_CONVERSION, "frame setup for closures"),
    "RESUME": H(NO_CONVERSION, "frame start"),
    "NOP": H(NO_CONVERSION, "no operation"),
    "CACHE": H(NO_CONVERSION, "inline cache entry (not executed)"),
    "EXTENDED_ARG": H(NO_CONVERSION, "argument prefix"),
    "POP_TOP": H(NO_CONVERSION, "expression statement"),
    "COPY": H(NO_CONVERSION, "stack copy"),
    "SWAP": H(NO_CONVERSION, "stack swap"),
    "BINARY_OP": H(NO_CONVERSION, "arithmetic and `+=`: Python numbers, or TF ops through tensor overloads",
                   sample="def f(x):\n    return x * 2.0 + 1\n"),
    "BINARY_SUBSCR": H(NO_CONVERSION, "indexing and slicing (tensor `__getitem__` emits strided slices)",
                       sample="def f(x):\n    return x[0]\n"),
    "UNARY_NEGATIVE": H(NO_CONVERSION, "`-x`", sample="def f(x):\n    return -x\n"),
    "UNARY_POSITIVE": H(NO_CONVERSION, "`+x`", sample="def f(x):\n    return +x\n"),
    "UNARY_INVERT": H(NO_CONVERSION, "`~x`", sample="def f(x):\n    return ~x\n"),
    "IS_OP": H(NO_CONVERSION, "`is` on Python objects", sample="def f(x):\n    return x is None\n"),
    "CONTAINS_OP": H(NO_CONVERSION, "`in` on Python containers", sample="def f(x, d):\n    return x in d\n"),
    "BUILD_TUPLE": H(NO_CONVERSION, "tuple display", sample="def f(x, y):\n    return (x, y)\n"),
    "BUILD_LIST": H(NO_CONVERSION, "list display", sample="def f(x, y):\n    return [x, y]\n"),
    "BUILD_SET": H(NO_CONVERSION, "set display", sample="def f(x, y):\n    return {x, y}\n"),
    "BUILD_MAP": H(NO_CONVERSION, "dict display", sample="def f(k, y):\n    return {k: y}\n"),
    "BUILD_CONST_KEY_MAP": H(NO_CONVERSION, "dict display with constant keys",
                             sample="def f(x, y):\n    return {'a': x, 'b': y}\n"),
    "BUILD_SLICE": H(NO_CONVERSION, "slice `a:b:c`", sample="def f(x):\n    return x[1:2:1]\n"),
    "BUILD_STRING": H(NO_CONVERSION, "f-string", sample="def f(x):\n    return f'{x}!'\n"),
    "FORMAT_VALUE": H(NO_CONVERSION, "f-string field", sample="def f(x):\n    return f'{x}'\n"),
    "LIST_APPEND": H(NO_CONVERSION, "list comprehension step", sample="def f(xs):\n    return [v for v in xs]\n"),
    "SET_ADD": H(NO_CONVERSION, "set comprehension step", sample="def f(xs):\n    return {v for v in xs}\n"),
    "MAP_ADD": H(NO_CONVERSION, "dict comprehension step", sample="def f(xs):\n    return {v: v for v in xs}\n"),
    "LIST_EXTEND": H(NO_CONVERSION, "`[*a, ...]`", sample="def f(a):\n    return [*a, 1]\n"),
    "SET_UPDATE": H(NO_CONVERSION, "`{*a, ...}`", sample="def f(a):\n    return {*a, 1}\n"),
    "DICT_UPDATE": H(NO_CONVERSION, "`{**a, ...}`", sample="def f(a):\n    return {**a, 'k': 1}\n"),
    "DICT_MERGE": H(NO_CONVERSION, "`g(**a, **b)`", sample="def f(g, a, b):\n    return g(**a, **b)\n"),
    "LIST_TO_TUPLE": H(NO_CONVERSION, "`(*a, ...)`", sample="def f(a):\n    return (*a, 1)\n"),
    "UNPACK_SEQUENCE": H(NO_CONVERSION, "`a, b = ...` (Python sequences, or statically shaped tensors)",
                         sample="def f(t):\n    a, b = t\n    return a\n"),
    "UNPACK_EX": H(NO_CONVERSION, "`a, *rest = ...`", sample="def f(t):\n    a, *rest = t\n    return a\n"),
    "RAISE_VARARGS": H(NO_CONVERSION, "`raise`: runs at build time on a Python-valued path; under a "
                                      "tensor branch the build fails and the call runs eagerly",
                       sample="def f(x):\n    raise ValueError(x)\n"),
    "LOAD_ASSERTION_ERROR": H(CONVERTED, "`assert`: the `if` it means (on a tensor: checked in the graph)",
                              _L + "asserts.visit_Assert", sample="def f(x):\n    assert x\n    return x\n"),
    "BEFORE_WITH": H(NO_CONVERSION, "`with` of TensorFlow's managers (`tf.GradientTape()`): entered at build time; "
                     "of the program's own: run in Python", sample=_WITH),
    "WITH_EXCEPT_START": H(NO_CONVERSION, "`with` exit on an exception (at build time)", sample=_WITH),
    "PUSH_EXC_INFO": H(NO_CONVERSION, "exception path of `with` / `try/finally`", sample=_FINALLY),
    "POP_EXCEPT": H(NO_CONVERSION, "exception path of `with` / `try/finally`", sample=_FINALLY),
    "RERAISE": H(NO_CONVERSION, "exception path of `with` / `try/finally`", sample=_FINALLY),
    # -- what stays imperative ----------------------------------------------------------------
    "CHECK_EXC_MATCH": H(IMPERATIVE, "`try/except` whose handler could run", UNS + "visit_Try", sample=_TRY),
    "CHECK_EG_MATCH": H(IMPERATIVE, "`except*`", UNS + "visit_Try", sample=_TRY_STAR),
    "PREP_RERAISE_STAR": H(IMPERATIVE, "`except*`", UNS + "visit_Try", sample=_TRY_STAR),
    "YIELD_VALUE": H(IMPERATIVE, "generator (`yield`)", UNS + "visit_Yield", sample=_GEN),
    "RETURN_GENERATOR": H(IMPERATIVE, "generator / coroutine start", UNS + "visit_Yield", sample=_GEN),
    "GET_YIELD_FROM_ITER": H(IMPERATIVE, "`yield from`", UNS + "visit_Yield", sample=_YFROM),
    "SEND": H(IMPERATIVE, "`yield from` / `await`", UNS + "visit_Yield", sample=_YFROM),
    "JUMP_BACKWARD_NO_INTERRUPT": H(IMPERATIVE, "`yield from` / `await` loop", UNS + "visit_Yield", sample=_YFROM),
    "GET_AWAITABLE": H(IMPERATIVE, "`await`", UNS + "visit_AsyncFunctionDef", sample=_ASYNC),
    "ASYNC_GEN_WRAP": H(IMPERATIVE, "async generator", UNS + "visit_AsyncFunctionDef", sample=_ASYNC_GEN),
    "GET_AITER": H(IMPERATIVE, "`async for`", UNS + "visit_AsyncFunctionDef", sample=_ASYNC_FOR),
    "GET_ANEXT": H(IMPERATIVE, "`async for`", UNS + "visit_AsyncFunctionDef", sample=_ASYNC_FOR),
    "END_ASYNC_FOR": H(IMPERATIVE, "`async for`", UNS + "visit_AsyncFunctionDef", sample=_ASYNC_FOR),
    "BEFORE_ASYNC_WITH": H(IMPERATIVE, "`async with`", UNS + "visit_AsyncFunctionDef", sample=_ASYNC_WITH),
    "MATCH_SEQUENCE": H(IMPERATIVE, "`match` sequence pattern", UNS + "visit_Match", sample=_MATCH_SEQ),
    "GET_LEN": H(IMPERATIVE, "`match` sequence length", UNS + "visit_Match", sample=_MATCH_SEQ),
    "MATCH_MAPPING": H(IMPERATIVE, "`match` mapping pattern", UNS + "visit_Match", sample=_MATCH_MAP),
    "MATCH_KEYS": H(IMPERATIVE, "`match` mapping keys", UNS + "visit_Match", sample=_MATCH_MAP),
    "MATCH_CLASS": H(IMPERATIVE, "`match` class pattern", UNS + "visit_Match", sample=_MATCH_CLS),
    "LOAD_BUILD_CLASS": H(IMPERATIVE, "in-line `class`", UNS + "visit_ClassDef", sample=_CLASS),
    "SETUP_ANNOTATIONS": H(IMPERATIVE, "annotations in a class body", UNS + "visit_ClassDef", sample=_CLASS),
    "LOAD_NAME": H(IMPERATIVE, "name read in a class body", UNS + "visit_ClassDef", sample=_CLASS),
    "STORE_NAME": H(IMPERATIVE, "name write in a class body", UNS + "visit_ClassDef", sample=_CLASS),
    "DELETE_NAME": H(IMPERATIVE, "`del` in a class body", UNS + "visit_ClassDef"),
    "IMPORT_NAME": H(IMPERATIVE, "in-line `import`", UNS + "visit_Import", sample=_IMPORT),
    "IMPORT_FROM": H(IMPERATIVE, "in-line `from ... import`", UNS + "visit_Import", sample=_IMPORT_FROM),
    "IMPORT_STAR": H(IMPERATIVE, "`from m import *` (module level only)", UNS + "visit_Import"),
    "PRINT_EXPR": H(IMPERATIVE, "interactive prompt only: such functions have no source file",
                    "codegen.syntax.source.parse_function"),
}

_REGISTRIES = {(3, 11): HANDLERS_311}


def handlers(version: tuple[int, int] | None = None) -> dict[str, Handler]:
    version = tuple(version or sys.version_info[:2])
    try:
        return _REGISTRIES[version]
    except KeyError:
        raise NotImplementedError(f"janus has no opcode coverage table for Python {version[0]}.{version[1]}; "
                                  f"known: {sorted(_REGISTRIES)}") from None


def sample_function(sample: str) -> ast.FunctionDef:
    """The function named `f` in a sample's source."""
    for node in ast.walk(ast.parse(sample)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "f":
            return node
    raise ValueError("a coverage sample must define a function named f")


def sample_opnames(sample: str) -> set[str]:
    """Every opcode name in the bytecode of a sample, nested code objects included."""
    names: set[str] = set()
    stack = [compile(sample, "<coverage sample>", "exec")]
    while stack:
        code = stack.pop()
        names.update(ins.opname for ins in dis.get_instructions(code, show_caches=True))
        stack.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    return names


def _observed(handler: Handler) -> tuple[str, str, tuple[str, ...]]:
    """(status, reason kind, handlers), from running the conversion pipeline on the sample."""
    if handler.sample is None:
        return handler.status, "", handler.handlers
    try:
        transform(sample_function(handler.sample), "<coverage sample>")
    except ConversionError as exc:
        return IMPERATIVE, exc.reason.kind, tuple(h for h in handler.handlers if h.startswith(UNS)) or (
            UNS + "UnsupportedConstructs",)
    if handler.status == IMPERATIVE:
        raise AssertionError(f"coverage sample for a construct declared imperative-only was converted: "
                             f"{handler.construct!r}")
    return handler.status, "", handler.handlers


@dataclasses.dataclass(frozen=True)
class Row:
    opname: str
    opcode: int
    status: str
    construct: str
    handlers: tuple[str, ...]
    reason: str          # the Reason kind users see for imperative-only constructs


def table(version=None) -> list[Row]:
    registry = handlers(version)
    rows = []
    for opname, opcode in sorted(dis.opmap.items(), key=lambda kv: kv[1]):
        handler = registry[opname]
        status, reason, used = _observed(handler)
        if status == IMPERATIVE and not reason:
            reason = {"visit_ClassDef": "class-def", "visit_Import": "import",
                      "parse_function": "no-source"}.get(used[0].rsplit(".", 1)[-1], "") if used else ""
        rows.append(Row(opname, opcode, status, handler.construct, used, reason))
    return rows


def markdown(rows: list[Row] | None = None) -> str:
    rows = rows if rows is not None else table()
    counts = {s: sum(r.status == s for r in rows) for s in (CONVERTED, NO_CONVERSION, IMPERATIVE)}
    out = [f"Python {sys.version_info[0]}.{sys.version_info[1]}: {len(rows)} opcodes — "
           + ", ".join(f"{n} {s}" for s, n in counts.items()), "",
           "| opcode | status | construct | handled by |", "| --- | --- | --- | --- |"]
    order = {CONVERTED: 0, IMPERATIVE: 1, NO_CONVERSION: 2}
    for r in sorted(rows, key=lambda r: (order[r.status], r.opname)):
        by = ", ".join(f"`{h.replace('codegen.lowering.', '')}`" for h in r.handlers) or "—"
        status = f"{r.status} `[{r.reason}]`" if r.reason else r.status
        out.append(f"| `{r.opname}` | {status} | {r.construct.replace('|', '/')} | {by} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown())
