"""Probes are transparent: a profiled call returns, raises and prints exactly
what the plain call does, and every swapped ``__code__`` is restored."""

import contextlib
import sys

import pytest

from profiler import profile_call
from profiler.discovery import reachable_functions


# --- the corpus --------------------------------------------------------------

def make_counter():
    count = 0

    def bump(step=1):
        nonlocal count
        count += step
        return count
    return bump


def closures(n):
    bump = make_counter()
    for i in range(n):
        bump(step=i)
    return bump()


def kw_target(a, b=2, *, c, d=4):
    return (a, b, c, d)


def keyword_calls(x):
    return kw_target(x, c=3), kw_target(a=1, b=x, c=x, d=0), sorted([3, 1, x], reverse=True)


def try_finally(x):
    log = []
    try:
        log.append(x)
        if x > 1:
            return log
    finally:
        log.append("finally")
    return log


def try_except(x):
    try:
        return 10 // x
    except ZeroDivisionError as exc:
        return f"caught {exc}"


def nested_raise(x):
    def inner(y):
        if y < 0:
            raise ValueError(f"negative {y}")
        return y
    try:
        return inner(x)
    except ValueError:
        return -1


class Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


def with_blocks(x):
    rec = Recorder()
    with rec as r:
        r.events.append(x)
    with contextlib.suppress(KeyError):
        {}[x]
    return rec.events


def comprehensions(n):
    squares = [i * i for i in range(n) if i % 2]
    table = {i: str(i) for i in range(n)}
    uniq = {i % 3 for i in range(n)}
    total = sum(i for i in range(n) if i > 1)
    return squares, table, uniq, total


def nested_functions(x):
    def outer(y):
        def inner(z):
            return z + y + x
        return inner(1)
    return outer(2)


def defaults(a, b=10, c=None):
    if c is None:
        c = []
    c.append(a + b)
    return c


def star_args(*args, **kwargs):
    return len(args), sorted(kwargs.items()), defaults(*args[:1], **{k: v for k, v in kwargs.items() if k == "b"})


class Point:
    scale = 2

    def __init__(self, x, y):
        self.x = x
        self.y = y

    @property
    def norm1(self):
        return abs(self.x) + abs(self.y)

    def scaled(self, k=None):
        k = self.scale if k is None else k
        return Point(self.x * k, self.y * k)

    @staticmethod
    def origin():
        return Point(0, 0)


def methods(x):
    p = Point(x, -x).scaled()
    q = Point.origin()
    q.x += 1
    return p.norm1, q.x, p.scaled(k=3).norm1


def while_break_continue(n):
    i, out = 0, []
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        if i > 7:
            break
        out.append(i)
    else:
        out.append("else")
    return out


def for_else(items, target):
    for i, item in enumerate(items):
        if item == target:
            found = i
            break
    else:
        found = None
    return found


def chained(x):
    return 0 < x < 10, 1 <= x <= 1, x == x != None  # noqa: E711


def and_or(a, b):
    return a and b, a or b, (a and not b) or (b and not a), [] or a


def conditional(x):
    y = "pos" if x > 0 else "neg" if x < 0 else "zero"
    return y, (x if x else None)


def raises(x):
    if x > 0:
        raise KeyError(f"bad {x}")
    return x


def prints(n):
    for i in range(n):
        print("line", i, end="|" if i % 2 else "\n")
    print("done", file=sys.stdout)
    return n


def gen(n):
    for i in range(n):
        yield i * 2


def uses_generator(n):
    return list(gen(n)) + [x for x in gen(2)]


def recursive(n):
    if n <= 1:
        return [n]
    return recursive(n - 1) + [n]


def unpacking(pairs):
    total = 0
    for a, (b, c) in pairs:
        total += a * b - c
    first, *rest = [p[0] for p in pairs]
    return total, first, rest


def loops_with_returns(xs):
    for x in xs:
        with contextlib.nullcontext():
            try:
                if x == 3:
                    return x
            finally:
                pass
    return None


CORPUS = [
    (closures, (4,), {}),
    (keyword_calls, (5,), {}),
    (try_finally, (0,), {}),
    (try_finally, (5,), {}),
    (try_except, (0,), {}),
    (try_except, (3,), {}),
    (nested_raise, (-3,), {}),
    (nested_raise, (3,), {}),
    (with_blocks, (7,), {}),
    (comprehensions, (6,), {}),
    (nested_functions, (1,), {}),
    (defaults, (1,), {}),
    (defaults, (1, 2), {"c": [0]}),
    (star_args, (1, 2, 3), {"b": 4, "z": 5}),
    (methods, (3,), {}),
    (while_break_continue, (5,), {}),
    (while_break_continue, (20,), {}),
    (for_else, ([1, 2, 3], 2), {}),
    (for_else, ([1, 2, 3], 9), {}),
    (chained, (5,), {}),
    (chained, (1,), {}),
    (and_or, (0, 3), {}),
    (and_or, ("a", ""), {}),
    (conditional, (0,), {}),
    (conditional, (-2,), {}),
    (raises, (1,), {}),
    (raises, (0,), {}),
    (prints, (5,), {}),
    (uses_generator, (3,), {}),
    (recursive, (5,), {}),
    (unpacking, ([(1, (2, 3)), (4, (5, 6))],), {}),
    (loops_with_returns, ([1, 2, 3, 4],), {}),
    (loops_with_returns, ([],), {}),
]


def _run_plain(fn, args, kwargs):
    try:
        return ("return", fn(*args, **kwargs))
    except Exception as exc:
        return ("raise", exc)


def _same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "raise":
        return type(a[1]) is type(b[1]) and str(a[1]) == str(b[1])
    return a[1] == b[1]


@pytest.mark.parametrize("fn,args,kwargs", CORPUS,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CORPUS)])
def test_profiled_run_is_transparent(fn, args, kwargs, capsys):
    reachable = reachable_functions(fn, args, kwargs)
    codes = {f: f.__code__ for f in reachable}
    expected = _run_plain(fn, args, kwargs)
    expected_out = capsys.readouterr()

    outcome, profile = profile_call(fn, args, kwargs)
    out = capsys.readouterr()

    assert _same(outcome, expected), (outcome, expected)
    assert out.out == expected_out.out and out.err == expected_out.err
    assert all(f.__code__ is code for f, code in codes.items())
    assert profile.get(fn) is not None and profile.get(fn).calls >= 1


def test_corpus_reaches_helpers():
    reachable = reachable_functions(methods, (3,), {})
    names = {f.__qualname__ for f in reachable}
    assert {"methods", "Point.scaled", "Point.origin", "Point.norm1", "Point.__init__"} <= names
    assert "gen" not in {f.__qualname__ for f in reachable_functions(closures, (1,))}


def test_generators_run_uninstrumented():
    _, profile = profile_call(uses_generator, (3,), {})
    assert profile.get(gen) is None
    assert profile.get(uses_generator).calls == 1


def test_code_restored_after_exception_in_user_code():
    before = raises.__code__
    outcome, _ = profile_call(raises, (1,), {})
    assert outcome[0] == "raise" and isinstance(outcome[1], KeyError)
    assert raises.__code__ is before
    with pytest.raises(KeyError):
        raises(1)


def test_nested_profile_calls_do_not_double_instrument():
    def outer(n):
        _, inner_profile = profile_call(recursive, (n,), {})
        return inner_profile.get(recursive).calls

    outcome, profile = profile_call(outer, (3,), {})
    assert outcome == ("return", 3)
    assert profile.get(outer).calls == 1
    assert recursive.__code__.co_consts == recursive.__code__.co_consts  # usable
    assert recursive(3) == [1, 2, 3]


def test_instrumented_code_is_cached():
    from profiler.instrument import instrument
    assert instrument(closures.__code__) is instrument(closures.__code__)


def test_instrumented_code_outside_a_session_records_nothing():
    import types
    from profiler.instrument import instrument
    copy = types.FunctionType(instrument(while_break_continue.__code__).code,
                              while_break_continue.__globals__)
    assert copy(20) == while_break_continue(20)


def test_custom_is_user_code_limits_instrumentation():
    _, profile = profile_call(methods, (3,), {}, is_user_code=lambda f: False)
    assert list(profile.functions) == [profile.get(methods).key]
