"""Programs a user might write, generated as source text.

Each program is a module with a function `f(x, n, box, tree)`: `x` a float tensor,
`n` a Python int, `box` an object with state, `tree` the tree `box` holds.  Its body mixes tensor and
Python arithmetic, `if` on tensors and on Python values, `for` over ranges
and lists (with an `else` too), `while` on tensors, recursive helpers (integer chains with tail
calls, and one on a tensor or a Python int, possibly writing state), `break`/`continue`/early `return`, calls of a
helper, writes to attributes, lists, dicts, a global and a `tf.Variable`,
ops that fail for some inputs after such writes (an out-of-range
`tf.gather`, a `tf.debugging` assertion), `print` and f-strings, and
returns a structure.  Some statements need Python between graph segments: a tensor's value in
Python (`float(t)`, `t.numpy()`); calls of a non-TensorFlow library (`queue.Queue.put`, an
environment's `step`, a seeded `random.Random`) run inside the graph, once per call.
Others test `isinstance`/`type` of the Python number `n`, call Python from inside the graph
(`tf.numpy_function`, which must run once per call), `break`/`continue` on a tensor inside
a loop over Python values, a float linear recursion, and a `tape.gradient` whose connection to
its source depends on the branch a tensor `if` takes (eager gives None on the unconnected side),
lists grown in a range loop that breaks on a tensor, and a lambda given to `tf.numpy_function`.
Recursions over `tree` call node methods (one raising on nodes it is not called on, one with an
effect), hand a node's number to TensorFlow, and compute with a NumPy-array attribute; between
calls a node may become one whose attributes Python reads through code (a property over a stale
`__dict__` entry, a `__getattribute__`, a dict subclass as `__dict__`), hold a tensor among Python
numbers, or an attribute named as the tables' own columns; recursions test a node's truth and
`==` and `in` between children (which a mutation makes the same node), and name or leave out an
argument, or pass a flag or fed numbers along unchanged (or an int computed past 32 bits, changed
or not), or return a pair from a leaf and a tensor elsewhere; a recursive method gathers rows of a
variable attribute (also reading it whole, or updating it in place after its gradient).
`n` is now and then a NumPy scalar; recursions pass a NumPy int down, changing it, and return a
NumPy comparison; one may count its calls in a class attribute; a node's number may become a
str or a complex between calls.  A recursion holds a root Python int past 32 bits where its
frames below hold int32 tensors; Python ints past 2**53 are divided; an object whose `__repr__`
is user code is printed, then changed (or changed between calls), and so are a deque and a
variable; lists of NumPy numbers become tensors.  A dict is written at keys that vary between
calls, then printed or made text; `:=` binds names inside comparisons, boolean operators,
conditional expressions, comprehensions and `while` tests; an outside list is read by Python's
own code (a comparison, a second comprehension clause, `sorted(key=...)`, `map`, `+`, `[*xs]`,
an operator getter, `re.sub`, a defaultdict's factory, `iter(f, sentinel)`); a recursion goes
through the children's own method (`self.left.msum(scale)`).

A rule that makes a known, still open bug is kept in `OPEN_BUG_RULES` with
its repro; it is generated only when `open_rules` is on (`--fuzz-open`), so
the default run checks what janus promises today and the open run measures
what it does not keep yet.
"""
from __future__ import annotations

from hypothesis import strategies as st

OPEN_BUG_RULES: dict[str, str] = {
    # A rule that makes a known, open bug is generated only under --fuzz-open, listed here with a
    # one-line repro, until the bug is fixed.
}
# The statements of those rules (generated only under --fuzz-open).
OPEN_STATEMENTS: list[str] = []

HEADER = '''import collections
import copy
import functools
import io
import operator
import queue
import random
import re
import types

import numpy as np

import tensorflow as tf

import toyenv      # tests/janus/library/site-packages: a library (the runner puts it on the path)

COUNT = 0
QUEUE = queue.Queue()
ENV = toyenv.Env(int_reward_every=7)
RNG = random.Random(0)
SRC = toyenv.Source([np.float64(0.5), np.float64(1.5)])
BUF = toyenv.Buffer()
LOG = []
TABLE = {}
CONF = collections.OrderedDict(scale=2.0)      # a dict subclass janus keeps no copy of
EMIT = LOG.append                               # a list reached through its bound method
LIMIT = [0]
SINK = io.StringIO()


class Box:
    hits = 0                                    # a class attribute, written through `type(box)`
    shared = []                                 # a list the class keeps, appended through an instance

    def bump(self, v):                          # a bound method handed around: it writes its object
        self.n += 1
        return v * 0.5

    @classmethod
    def made(cls):                              # called through an instance: it writes the class
        cls.hits += 1
        return cls.hits

    def __len__(self):                          # the program's own special method
        return len(self.items)

    def __init__(self):
        self.n = 0
        self.t = tf.constant(0.0)
        self.items = []
        self.ws = [0.5, 2.0]
        self.hist = {"a": [], "b": [1.0]}       # a dict of lists: its reading methods hand out its lists
        self.losses = [tf.constant(1.0)]        # a list of tensors read by index, appended to
        self.layers = [Layer(), Layer()]
        self.v = tf.Variable(0.0)
        self.tree = Node(1, Node(2.5), Node(3, Node(4)))
        self.emb = tf.Variable(np.arange(8.0, dtype=np.float32).reshape(4, 2) * 0.25)
        self.lazy = None                        # a variable made on the call that finds it None
        self.dense = tf.keras.layers.Dense(2, kernel_initializer="ones")    # library code reads its settings
        self.dense.build((None, 1))
        self.act = tf.keras.layers.LeakyReLU(negative_slope=0.5)            # read by library code through
        self.seq = tf.keras.Sequential([self.act])                          # the Sequential holding it
        self.seq.build((None, 2))
        self.acc = [tf.zeros([2]), tf.ones([2])]                            # a list of tensors, fed item by item

    @property
    def scaled(self):
        self.n += 1                  # a getter with an effect: it runs once per read, as in eager
        return self.t * 0.5 + len(self.items)

    def remb(self, node, whole=False):
        """Rows of a variable attribute gathered in a recursion (whole: the variable read whole too)."""
        if node.left is None:
            return tf.gather(self.emb, [3]) + (tf.reduce_mean(self.emb) if whole else 0.0)
        return tf.tanh(self.remb(node.left, whole) * 0.5 + tf.gather(self.emb, [1]))


class Node:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right
        self.tv = tf.constant(0.5)
        self.arr = np.arange(2.0)

    def is_leaf(self):
        return self.left is None

    def gap(self):
        return self.left.tv - self.w            # raises on a leaf: called only on inner nodes

    CAP = 0

    def capped(self):
        return self.left is None or self.w < Node.CAP     # a class attribute the function sets first

    def shallow(self):
        return self.left is None or self.w < LIMIT[0]     # a global the function sets first

    def seen(self):
        global COUNT
        COUNT += 1                              # an effect: runs as often as eager calls it
        return self.right is None

    def msum(self, scale):
        """A recursion through the children's own method (`self.left.msum`)."""
        if self.left is None:
            return self.tv * scale + self.w
        if self.right is None:
            return self.left.msum(scale) * 0.5
        return self.left.msum(scale) + self.right.msum(scale) * self.w


class Stale(Node):
    """`w` is a property: Python reads it, not the stale `w` left in the node's __dict__."""
    def __init__(self, w):
        self.__dict__.update(w=w + 100, left=None, right=None, tv=tf.constant(0.5), arr=np.arange(2.0))

    @property
    def w(self):
        return self.__dict__["w"] - 100

    @w.setter
    def w(self, value):
        self.__dict__["w"] = value + 100


class Half(Node):
    def msum(self, scale):
        """The children's recursion, its own way: the overrides merge into one machine."""
        if self.left is None:
            return self.tv * scale * 0.5
        return self.left.msum(scale) - self.w


class Doubling(Node):
    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        return value * 2 if name == "w" else value


class Plus(dict):
    """A node's __dict__ whose reads by key differ from Python's attribute reads."""
    def __getitem__(self, k):
        return dict.__getitem__(self, k) + 1000 if k == "w" else dict.__getitem__(self, k)


class Layer:
    def __init__(self):
        self.w = tf.constant(2.0)


class Tagged:                                   # a class that keeps the list it is given
    def __init__(self, tags):
        self.tags = tags


class Counter:
    n = 0                                       # a class attribute a recursion may count its calls in


class Seen(dict):                               # program code Python's machinery calls: `__missing__`
    def __missing__(self, key):
        LOG.append(key)
        return len(LOG) + key


def helper(v, k):
    return v * k + 1.0


class Scope:                                    # a context manager of the program's own
    def __init__(self, tag):
        self.tag = tag

    def __enter__(self):
        LOG.append(self.tag)
        return len(LOG) % 3 + 1

    def __exit__(self, *exc):
        print("leaving", self.tag)
        return False


def remember(v, seen=[]):                       # a mutable default it changes on every call
    seen.append(v)
    return len(seen)


def scaled(v, by=2.0, *, shift=0.5):            # defaults the mutations replace or change in place
    return v * by + shift


def fscale(v, f=1.0):                           # a keyword named like janus's own call operator's
    return v * f


def make_scaler():                               # a factory: the function it makes reads its dict
    cfg = {"k": 2.0}

    def by_cfg(v):
        return v * cfg["k"]
    return cfg, by_cfg


SCALER_CFG, by_cfg = make_scaler()


def logged(fn):                                  # a decorator of the usual kind: its wrapper's code runs
    @functools.wraps(fn)
    def wrapper(v, times=1.0):
        LOG.append(fn.__name__)
        return fn(v) * times
    return wrapper


@logged
def halved(v):
    return v * 0.5


def rec(v, m, box):
    global COUNT
    if m <= 0:
        return v
    REC_WRITE
    return rec(v * 0.5, m - 1, box) + 1.0


def ichain(m, d):
    if m <= 0:
        return m % 3
    if m % 2 == 0:
        return ichain(m - 1, d)
    return ichain(m - 2, d) + m % d


def ieven(m):
    if m <= 0:
        return 1
    return iodd(m - 1)


def iodd(m):
    if m <= 0:
        return 0
    return ieven(m - 1) + 1


def doubled(a):
    LOG.append(-1)                 # Python a graph calls: must run once per call, as eagerly
    return a * 2


def picky(a):
    LOG.append(-2)                 # Python a graph calls that raises after changing state
    if a.sum() > 6:
        raise ValueError("picky")
    return a


VAR = tf.Variable(0.0)
VAR_HANDLE = VAR.handle          # a raw handle kept in a global
VAR_ALIAS = tf.identity(VAR.handle)     # a second handle to the same variable


def vbump(a):
    VAR.assign_add(1.0)            # Python a graph calls that assigns a variable the graph read
    LOG.append(-3)
    return a


def fpow(v, m):
    if m == 0:
        return tf.ones_like(v)
    return v * fpow(v, m - 1)


def ackish(m, j):
    if m == 0:
        return j + 1
    return ackish(m - 1, 1)


def bigmul(m, j):
    if m == 0:
        return j * 100000
    return bigmul(m - 1, 50000)


def grow(m, acc):
    if m == 0:
        return acc
    return grow(m - 1, acc * 23)


def bigadd(m, acc):
    if m == 0:
        return acc
    return bigadd(m - 1, acc + 2**32)


def sevenths(m, acc):
    if m == 0:
        return acc / 7
    return sevenths(m - 1, acc * 3)


def thirds(m, a):
    """`a` is a Python int at the root and an int32 tensor below (`a // 3 - m`)."""
    if m == 0:
        return a + tf.constant(0, tf.int32)
    return thirds(m - 1, a // 3 - m) + m + tf.cast(a > 100, tf.int32)


class Shown:
    """Its text reads an attribute and a class attribute."""
    seen = 0

    def __init__(self):
        self.v = 1

    def __repr__(self):
        return f"Shown({self.v}, {Shown.seen})"


SHOWN = Shown()


def ack(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ack(m - 1, 1)
    return ack(m - 1, ack(m, n - 1))


def tsum(node):
    if node is None:
        return 0
    return node.w + tsum(node.left) + tsum(node.right)


def leafw(node):
    if node.left is None:
        return node.w
    return leafw(node.left)


def narrow(x, m):
    if m == 0:
        return tf.cast(x, tf.float64)
    return narrow(tf.cast(x, tf.float32), m - 1) + tf.cast(x, tf.float64)


def fbase(x, m):
    if m <= 0:
        return 1.5
    return x * fbase(x, m - 1)


def tgap(node):
    if node.is_leaf():
        return node.tv * 2.0
    return tgap(node.left) + node.gap()


def tseen(node):
    if node.seen():
        return node.tv
    return tseen(node.right) + 1.0


def tshallow(node):
    if node.shallow():
        return node.tv
    return tshallow(node.left) + tshallow(node.right)


def tcapped(node):
    if node.capped():
        return node.tv
    return tcapped(node.left) + tcapped(node.right)


def tarr(node):
    if node.left is None:
        return node.arr
    return tarr(node.left) * 0.5 + node.arr


def ttruth(node):
    if not node.left:
        return node.tv
    out = ttruth(node.left)
    if node.right:
        out = out + ttruth(node.right)
    return out


def teq(node):
    if node.left is None:
        return node.tv
    if node.left == node.right:
        return teq(node.left) * 3.0
    return teq(node.left) + 1.0


def tin(node):
    if node.left in (None,):
        return node.tv
    if node.right in [node.left]:
        return tin(node.left) * 2.0
    return tin(node.left) + 1.0


def tnis(node):
    if (node.left is None) is True:
        return node.tv
    return tnis(node.left) + 1.0


def tcount(node, flag=True):
    if node.left is None:
        return node.tv * isinstance(node.right is None, bool) + (node.right is None)
    if flag is True:
        return tcount(node.left, not flag) + 1.0 * (node.right is None)
    return tcount(node.left, True) - (node.left is not None) + (type(not node.right) is bool)


def tflag(node, training, scale=2):
    if node.left is None:
        return node.tv * (2.0 if training else 1.0) + (tf.reduce_sum(node.tv) if training else 0.5)
    h = tflag(node.left, training, scale) * scale
    if training:
        h = h + 1.0
    return h


def tchain(node, a=1):
    if node.left is None:
        return node.tv * (0 < node.w < 3) + ~a
    return tchain(node.left, a + 2) + (1 <= a < 4 <= node.w + 4) + ~(node.right is None)


def tfl(node):
    if node.left is None:
        return node.tv * float(node.w)
    return tfl(node.left) + float(node.w) + bool(node.w)


def tshift(node, k, scale):
    if node.left is None:
        return node.tv * scale + k
    h = tshift(node.left, k, scale) + 1.0
    if k > 2:
        h = tf.tanh(h)
    return h * scale


def tdown(node, k):
    if node.left is None:
        return node.tv * 2.0 if k > 5 else node.tv
    return tdown(node.left, k - 1) + 1.0


def tsdiv(node, s):
    if node.left is None:
        return node.tv * (1.0 / s) + node.w // 0.1 + 7.0 % s
    return tsdiv(node.left, s - 0.5) + (node.w - 2.5) ** s


def tnp(node, s):
    """NumPy attributes (after a mutation) meeting a float passed down and a NumPy constant."""
    if node.left is None:
        return node.tv * (node.w * s + np.float32(0.1) * node.w)
    return tnp(node.left, s * 0.5) + node.w * 0.1


def tnpacc(node, acc):
    """A NumPy int changed on the way down: each frame's own, of NumPy's type."""
    if node.left is None:
        return node.tv * float(acc)
    out = tnpacc(node.left, acc * np.int32(2) - np.int32(1))
    return out if node.right is None else out + tnpacc(node.right, acc + np.int32(3))


def tnpcmp(node, s):
    """A NumPy comparison (an np.bool_) returned, combined with `&` and `and`."""
    if node.left is None:
        return np.float32(node.w) < s
    below = tnpcmp(node.left, s)
    return below if node.right is None else (below & tnpcmp(node.right, s)) and below


def tdepth(node):
    if node.left is None:
        return node.tv * round(node.w), 0
    h, d = tdepth(node.left)
    if node.right is not None:
        h2, d2 = tdepth(node.right)
        h, d = h + h2, max(d, d2, 0)
    return h + divmod(node.w, 0.7)[1], min(d + 1, 9)


def tlp(node):
    if node.left is None:
        return node.tv, 1.0
    return tlp(node.left)[0] + 1.0


def tdef(node, scale=1.0):
    if node.left is None:
        return node.tv * scale
    out = tdef(node.left, scale=scale * 0.5)
    if node.right is not None:
        out = out + tdef(node.right)
    return out


def tpeek(v, i):
    tf.gather(tf.reshape(v, [-1]), i)      # unused, and out of range for i > 0: eager raises
    return v


def tpick(node):
    if node.left is None:
        return node.tv
    return tpick(node.left) * 0.5 + node.tv


def mixed(m):
    if m <= 0:
        return m + 1
    if m == 1:
        return 7
    return mixed(m - 2)


def vpow(v, m):
    if m < 0:
        raise ValueError("negative power")     # a recursion that validates its argument
    if m == 0:
        return v
    return vpow(v, m - 1) * 1.5


class Stepper:                                  # the program as a method of an instance: the runner may
    def __init__(self, box):                    # speculate `f` here, in the class (one function per instance)
        self.box = box

    def f(self, x, n, tree):
        return f(x, n, self.box, tree)


def f(x, n, box, tree):
    global COUNT
    t = x * 1.0
    k = n
    s = 0.5
'''

TENSOR_EXPRS = ["x", "t", "x * n", "tf.reduce_sum(x)", "helper(t, k)", "tf.tanh(t)", "t * 0.5", "x + k"]
INT_EXPRS = ["n", "k", "1", "2", "3", "k % 5", "n // 3", "abs(k) + 1", "len(LOG)"]
SMALL = ["-1.0", "0.0", "1.0", "2.5"]
PRINTS = ['"k", k', '"t", t', 'f"k={k} s={s}"', '"n", n, s']


@st.composite
def tensor_test(draw):
    return f"tf.reduce_sum({draw(st.sampled_from(['x', 't']))}) > {draw(st.sampled_from(SMALL))}"


# Python's C code calling the program back, each reading the box's list (which changes).
CALLED_BACK = ["operator.methodcaller('count', 1)(box.items)",
               "re.sub(r'[0-9]', lambda mt: str(len(box.items)), 'a1b2')",
               "collections.defaultdict(lambda: len(box.items))[k] + k",
               "operator.attrgetter('n')(box)",
               "list(iter(lambda: box.items.pop() if len(box.items) > 3 else None, None))",
               "Seen()[k]"]


@st.composite
def python_test(draw):
    return draw(st.sampled_from(["n > 3", "k % 2 == 0", "n < 0", "k > 10", "s > 1.0", "len(LOG) > 2"]))


@st.composite
def simple_statement(draw, in_loop: bool, open_rules: bool):
    choices = [
        lambda: f"t = t + {draw(st.sampled_from(TENSOR_EXPRS))}",
        lambda: f"t = t * {draw(st.sampled_from(['0.5', '2.0', 'tf.tanh(t)']))}",
        lambda: f"k = k {draw(st.sampled_from(['+', '-', '*']))} {draw(st.sampled_from(INT_EXPRS))}",
        lambda: f"k = k // {draw(st.sampled_from(['2', '(abs(n) + 1)', '3']))}",
        lambda: f"s = s + n / {draw(st.sampled_from(['(abs(k) + 1)', '4', '3']))}",
        lambda: f"s = s * {draw(st.sampled_from(['1.5', '0.1']))}",
        lambda: "print(" + draw(st.sampled_from(PRINTS)) + ")",
        # A print under print options the function sets (the replay after the run has the caller's).
        lambda: f"with np.printoptions(precision={draw(st.sampled_from(['1', '3']))}):\n    print(\"t\", t, s)",
        lambda: "box.n += 1",
        lambda: "box.t = box.t + tf.reduce_sum(t)",
        lambda: "box.items.append(k)",
        lambda: "LOG.append(k)",
        lambda: "COUNT += 1",
        lambda: "TABLE[k % 3] = k",
        # Items keyed by a Python int that varies between calls, then the dict used again, printed or
        # made text (with the call's own tensors in it).
        lambda: f"TABLE[{draw(st.sampled_from(['k', 'n', 'len(TABLE)']))}] = {draw(st.sampled_from(['t', 's', 'k']))}",
        lambda: f"{draw(st.sampled_from(['print(TABLE)', 'print(TABLE.items())', 'LOG.append(str(TABLE))', 'LOG.append(len(TABLE))', 'LOG.append(sorted(TABLE))']))}",
        # `:=` in a comparison, a boolean operator, a conditional expression, a comprehension and a
        # `while` test: the name is the function's.
        lambda: f"if (m := {draw(st.sampled_from(TENSOR_EXPRS))}) is not None and {draw(python_test())}:\n    t = t + m",
        lambda: "k = k + (0 < (jw := k % 4) < 3) + jw",   # (not `j`: the tensor loop's counter)
        # (on values the same every call: a varying int in Python control flow is specialised on)
        lambda: "t = (w := t * 0.5) + w if x.dtype == tf.float32 else t",
        lambda: "ys = [(last := t * float(i)) for i in range(2)]\nt = t + last + ys[0]",
        lambda: "jw = 3\nwhile (jw := jw - 1) > 0:\n    t = t + 1.0",
        # An outside list read by Python's own code: a list comparison, a comprehension's second
        # clause, a function handed to `sorted`/`map`, a container's bound method, `+` and starred items.
        lambda: f"LOG.append({draw(st.sampled_from(['box.items < [1, 2]', '[v for row in [box.ws, box.items] for v in row][-2:]', 'sorted(range(len(box.items)), key=lambda i: -box.items[i])[:2]', 'list(map(box.items.__getitem__, range(min(2, len(box.items)))))', '(box.items + [k])[-2:]', '[*box.items][:3]', 'max(box.hist, key=lambda name: len(box.hist[name]))']))})",
        # Python's C code calling the program back: an operator getter, `re.sub` with a function,
        # a defaultdict's factory, `iter(f, sentinel)`; each reads the box's list, which changes.
        lambda: "LOG.append(" + draw(st.sampled_from(CALLED_BACK)) + ")",
        lambda: "box.v.assign_add(tf.reduce_sum(t))",
        # An op with no output: eager gives None, a graph a tf.Operation.
        lambda: "LOG.append(box.v.assign_add(tf.reduce_sum(t) * 0.0, read_value=False) is None)",
        lambda: f"t = rec(t, {draw(st.sampled_from(['tf.constant(abs(n) % 3)', 'abs(k) % 3']))}, box)",
        # Integer chains (depth-first under XLA): tail calls, mutual recursion, a divisor that may be 0.
        lambda: "t = t + tf.cast(ichain(tf.constant(abs(n) % 9), tf.constant(abs(k) % 3)), tf.float32)",
        lambda: "k = k + int(ieven(tf.constant(abs(k) % 7)))",
        lambda: "t = t + tf.gather(x, k % 4)",
        lambda: "t = vpow(t, tf.constant(abs(k) % 5 - 1))",
        lambda: "t = t + box.scaled",
        lambda: "tf.gather(x, n % 5)",               # an unused value that may fail
        lambda: f"assert {draw(tensor_test())}, f'k={{k}}'",
        # A variable written, then read by an op that may fail (a failed run puts it back), or not.
        lambda: "box.v.assign_add(1.0)\nt = t + tf.gather(x, k % 4 + tf.cast(box.v * 0.0, tf.int32))",
        # A raw op on the variable's handle, after a write by its method.
        lambda: ("box.v.assign_add(1.0)\n"
                 "t = t + tf.cast(tf.raw_ops.ReadVariableOp(resource=box.v.handle, dtype=box.v.dtype), t.dtype)"),
        # A raw write through a handle kept in a global, before an op that may fail, read by it or not.
        lambda: ("tf.raw_ops.AssignAddVariableOp(resource=VAR_HANDLE, value=tf.constant(1.0))\n"
                 f"t = t + tf.gather(x, k % 4{draw(st.sampled_from(['', ' + tf.cast(VAR * 0.0, tf.int32)']))})"),
        # A raw write through a second handle to a variable the function also reads.
        lambda: "tf.raw_ops.AssignAddVariableOp(resource=VAR_ALIAS, value=tf.constant(1.0))\nt = t + VAR.read_value()",
        # A traced tf.map_fn whose body no graph can run (the build stops inside it), and eager's
        # tf.recompute_grad, which reads the variable scope such a stop would leave changed.
        lambda: "t = tf.map_fn(lambda e: e * np.float32(tf.reduce_sum(e)), t)",
        lambda: "t = tf.recompute_grad(lambda u: u * 2.0)(t)",
        lambda: "tf.debugging.assert_less(tf.reduce_sum(t), 20.0)",
        lambda: "TABLE.update({k % 2: s})",
        lambda: "TABLE[n % 2] = TABLE.get(n % 2, 0) + 1",
        lambda: "LOG.clear()",
        lambda: "for layer in box.layers:\n    t = t * layer.w",
        # Graph breaks: a tensor's value in Python, a library call acting on the world.
        lambda: "s = s + float(tf.reduce_sum(t))",
        lambda: 'print("value", t.numpy())',
        lambda: "if float(tf.reduce_mean(t)) > 0.5:\n    k = k + 1",
        lambda: "QUEUE.put(k)\nLOG.append(QUEUE.qsize())",
        # A closure writing a local of the function across a break; an iterator handed across one.
        lambda: ("hits = 0\n\ndef hit(v):\n    nonlocal hits\n    hits += int(v.numpy() > 0.5)\n\n"
                 "for v in tf.unstack(tf.reshape(t, [-1])[:2]):\n    hit(v)\nk = k + hits"),
        lambda: 'walk = iter([t, t * 2.0])\nprint("first", next(walk).numpy())\nt = next(walk)',
        # Library calls run inside the graph once per call: an environment step (whose reward is
        # an int now and then), its state read after it, and a seeded draw.
        lambda: ("obs, rw, dn, info = ENV.step(abs(k) % 3)\nt = t + tf.reduce_sum(tf.convert_to_tensor(obs)) * rw\n"
                 "LOG.append(ENV.steps)"),
        lambda: f"s = s + RNG.random() * {draw(st.sampled_from(['1.0', 'n']))}",
        # A keyword-argument call with a guard after it (replayed at the call's span), a NumPy
        # scalar result, and an array the library keeps and returns again.
        lambda: (f"obs, rw, dn, info = ENV.step(action=abs(n) % 2)\nif {draw(tensor_test())}:\n"
                 "    t = t * 2.0 + tf.reduce_sum(tf.convert_to_tensor(obs))"),
        lambda: "s = s + (0.5 if isinstance(SRC.next(), float) else 0.25)",
        lambda: "ba = BUF.get()\nbb = BUF.get()\nt = t + float(ba[0]) + float(bb[0])",
        # Python arithmetic on numbers computed from tensors: floor division and remainder from
        # fmod, an int against a float, max with the first kept, float powers, a gradient cut.
        lambda: f"s = s + float(tf.reduce_sum(t)) // {draw(st.sampled_from(['0.1', '-3.0', 's + 0.5']))}",
        lambda: f"s = s + float(tf.reduce_sum(t)) % {draw(st.sampled_from(['3.0', '-0.7', '(abs(k) + 1)']))}",
        lambda: "k = k + (1 if int(tf.reduce_sum(x)) < s else 0)",
        lambda: f"s = s + max(float(tf.reduce_mean(t)), {draw(st.sampled_from(['0.5', 's', 'n']))})",
        lambda: f"s = s + float(tf.reduce_sum(t)) ** {draw(st.sampled_from(['2', '0.5', '-1.0']))}",
        lambda: ("with tf.GradientTape() as tape:\n    tape.watch(t)\n    g = float(tf.reduce_sum(t)) * t\n"
                 "t = t + tape.gradient(g, t)"),
        lambda: "t = tf.cast(t, tf.float64)",       # a dtype that changes inside a loop
        # The type of a Python number fed as a tensor (n is sometimes a float).
        lambda: "k = k + (1 if isinstance(n, int) else 2)",
        lambda: "s = s + (0.5 if type(n) is float else 0.25)",
        # Python called from inside the graph, then an op that may fail.
        lambda: "t = tf.reshape(tf.numpy_function(doubled, [t], t.dtype), tf.shape(t))",
        # State the call changes, read after it; a call that raises; a function defined in f.
        lambda: "t = tf.reshape(tf.numpy_function(doubled, [t], t.dtype), tf.shape(t)) + float(len(LOG))",
        lambda: "t = tf.reshape(tf.numpy_function(picky, [t], t.dtype), tf.shape(t))",
        lambda: ("def inner(a):\n    LOG.append(len(LOG))\n    return a\n"
                 "t = tf.reshape(tf.numpy_function(inner, [t], t.dtype), tf.shape(t))"),
        # A variable read before a call whose Python assigns it (and changes LOG, read after).
        lambda: ("s0 = VAR.read_value()\nt = tf.reshape(tf.numpy_function(vbump, [t], t.dtype), tf.shape(t))\n"
                 "LOG.append(float(len(LOG)))\nt = t + s0"),
        # Lists the function grows in a range loop that breaks on a tensor (carried as tensors),
        # a float that becomes a tensor looping over one, and lists read as structures or held
        # under two names (kept Python lists); a lambda over a local rebound after the call.
        lambda: ("acc, seen = [], []\nfor qi in range(4):\n    acc.append(t * 0.5)\n    seen.append(qi)\n"
                 f"    if {draw(tensor_test())}:\n        break\ngq = 0.0\nfor a in reversed(acc):\n"
                 "    gq = a + 0.5 * gq\nt = t + gq\nk = k + len(seen)"),
        lambda: ("aa = bb = []\nfor qi in range(3):\n    aa.append(t)\n    bb.append(t * 2.0)\n"
                 "    if tf.reduce_sum(t) > qi:\n        break\nk = k + len(bb)"),
        lambda: ("cc = []\nfor qi in range(3):\n    cc.append(t)\n    if tf.reduce_sum(t) > qi:\n        break\n"
                 "t = t + tf.reduce_sum(tf.concat(cc, 0))"),
        lambda: ("sc = 1.5\nt = tf.reshape(tf.numpy_function(lambda a: a * sc, [t], t.dtype), tf.shape(t))\n"
                 "sc = 2.0\nt = t + sc"),
        # A comparison of the Python number `n` is a Python bool: `or` gives it or the tensor.
        lambda: f"s = s + (1.0 if (n > 3 or {draw(tensor_test())}) is True else 0.5)",
        # `max`/`min` return one of their arguments: a varying bool stays a bool, a Python number
        # against a tensor wins by the tensor's value.
        lambda: "s = s + (1.0 if type(max(n > 2, n > 3)) is bool else 0.5)",
        lambda: "s = s + (0.5 if type(min(tf.reduce_sum(t), 2)) is int else 0.25)",
        # A float linear recursion (two loops), and a gradient whose connection depends on a branch.
        lambda: "t = t + fpow(t * 0.5, tf.constant(abs(k) % 4))",
        # A gradient through a tensor loop that may run zero times (then eager's is None); its
        # counter is not the tensor while's `j`, which it would reset inside that loop forever.
        lambda: ("with tf.GradientTape() as tape:\n    tape.watch(t)\n    g = tf.ones_like(t)\n"
                 "    q = tf.constant(0)\n    while q < tf.constant(abs(k) % 3):\n        g = g * t\n        q += 1\n"
                 "LOG.append(tape.gradient(g, t) is None)"),
        # Recursion over a tree whose number attributes are ints on some nodes and floats on
        # others (the result's type depends on the nodes), and over a tensor attribute.
        # A variable attribute the recursion gathers rows of, updated in place after its gradient.
        lambda: f"t = t + tf.cast(tf.reduce_sum(box.remb(tree{draw(st.sampled_from(['', ', True']))})), t.dtype)",
        lambda: ("with tf.GradientTape() as tape:\n    r = tf.reduce_sum(box.remb(tree))\n"
                 "box.emb.assign_sub(0.125 * tf.convert_to_tensor(tape.gradient(r, box.emb)))\nt = t + tf.cast(r, t.dtype)"),
        lambda: f"s = s + remember({draw(st.sampled_from(['t', 'k', 'x * 2.0']))}) * 0.5",
        lambda: f"s = s + scaled({draw(st.sampled_from(['t', 'k', 'x']))})",
        lambda: "s = s + float(len(box.arr.shape) + (box.arr.shape == [2]))",
        lambda: f"t = halved(t{draw(st.sampled_from(['', ', times=2.0']))})",
        lambda: "act = lambda v: tf.tanh(v) * 0.5\nt = act(t)",
        lambda: "if k == 123457:\n    raise SystemExit('a side no call takes')",
        lambda: "box.shared.append(k)\nk = k + len(box.shared)",
        lambda: "bump = box.bump\nt = t + bump(t)",
        lambda: "k = k + box.made()",
        lambda: "if hasattr(box, 'extra'):\n    k = k + box.extra\nelse:\n    box.extra = k",
        lambda: "k = k + len(box)",
        # `and`/`or`/`not`/`max` on tensors: an operand, not its truth; Python's NaN rule.
        lambda: "t = t + (tf.reduce_sum(t) or tf.reduce_max(x))",
        lambda: "k = k + (1 if (not tf.reduce_sum(t) > 2.0) is True else 0)",
        lambda: "t = t + max(tf.reduce_sum(t), tf.reduce_max(t))",
        # A variable that is None unless a tensor loop or a tensor `if` sets it.
        lambda: "r = None\nfor i in tf.range(abs(k) % 3):\n    r = i\nk = k + (0 if r is None else int(r))",
        lambda: "r = None\nif tf.reduce_sum(t) > 1.0:\n    r = t\nk = k + (r is None)",
        lambda: "k = k + ((int(tf.reduce_sum(x)) << 1) ^ (abs(n) & 3))",
        lambda: "tg = [k]\nhd = Tagged(tg)\ntg.append(n)\nk = k + len(hd.tags) + (hd.tags is tg)",
        lambda: f"with Scope({draw(st.sampled_from(['1', 'k']))}) as q:\n    t = t * q",
        # The same attribute reached two ways in one call: written through the class (or through
        # `type(...)`, `object.__setattr__`, `vars`) and read through an instance, or the other way.
        lambda: "Counter.n += 1\nk = k + Counter().n",
        lambda: "type(box).hits += 2\nk = k + box.hits",
        lambda: "object.__setattr__(box, 'n', box.n + 3)\nk = k + box.n",
        lambda: "vars(box)['n'] = box.n + 1\nt = t * box.n",
        lambda: ("if box.lazy is None:\n    box.lazy = tf.Variable(tf.zeros([2]))\n"
                 "box.lazy.assign_add(tf.ones([2]))\nt = t + tf.cast(tf.reduce_sum(box.lazy), t.dtype)"),
        lambda: "t = t + tf.cast(tf.reduce_sum(box.dense(tf.reshape(tf.cast(t, tf.float32)[:1], [1, 1]) - 3.0)), t.dtype)",
        lambda: "t = t * CONF['scale']",
        # An attribute of a layer written, then read by library code holding the layer, or by
        # library code given a list holding it.
        lambda: ("box.act.negative_slope = 0.1 * (abs(k) % 4)\n"
                 "t = t + tf.cast(tf.reduce_sum(box.seq(tf.reshape(tf.cast(t, tf.float32)[:2], [1, -1]) - 1.0)), t.dtype)"),
        lambda: "box.act.negative_slope = 0.25\nk = k + len(repr([box.act.negative_slope, box.ws]))",
        # A list of tensors on the box: replaced, assigned by index, returned into the result.
        lambda: "box.acc = [a * 0.5 + tf.cast(tf.reduce_sum(t), tf.float32) for a in box.acc]",
        lambda: "box.acc[0] = box.acc[0] + 1.0\nt = t + tf.cast(tf.reduce_sum(box.acc[-1]), t.dtype)",
        lambda: "t = t + tf.cast(tf.add_n(box.acc)[0], t.dtype)\nk = k + (box.acc is box.items)",
        lambda: "t = fscale(t, f=0.5)",
        # A dataset made in the call and stored: its class (and repr) as eager's.
        lambda: "box.ds = tf.data.Dataset.from_tensor_slices(tf.reshape(tf.cast(t, tf.float32), [-1])[:2])",
        # A shallow copy of the box shares its list and reads its attributes of this call.
        lambda: "copy.copy(box).items.append(k)\nk = k + copy.copy(box).n",
        # The lists a dict on the box holds, reached through its reading methods: appends and
        # the newest items of this call.
        lambda: "for hv in box.hist.values():\n    hv.append(k)\nk = k + len(box.hist['a'])",
        lambda: "box.hist.setdefault('c', []).append(s)\ns = s + len(box.hist.get('c'))",
        lambda: "t = t + sum(hv[-1] for hk, hv in box.hist.items() if hv)",
        # Attributes written on the sides of a tensor `if`, one side or both.
        lambda: "if tf.reduce_sum(t) > 0.0:\n    box.n += 1\nelse:\n    box.t = box.t + 1.0",
        lambda: "if tf.reduce_sum(x) > 1.0:\n    box.n = box.n + k",
        # The newest item of a list of tensors, read by index before or after this call's append.
        lambda: "t = t + tf.cast(box.losses[-1], t.dtype)\nbox.losses.append(tf.reduce_sum(x))",
        lambda: "box.losses.append(tf.reduce_sum(x))\nt = t * tf.cast(box.losses[-1], t.dtype)",
        # A nested helper rebinding the function's own local, called on one side of a tensor `if`.
        lambda: "def bump():\n    nonlocal k\n    k += 1\nif tf.reduce_sum(t) > 0.0:\n    bump()",
        # A function a factory made, reading the factory's dict; a lambda calling it.
        lambda: "t = by_cfg(t)",
        lambda: "t = tf.map_fn(lambda e: by_cfg(e), t)",
        # The program's functions that TensorFlow calls back: they read globals again on every
        # call, and print only where eager's call runs them.
        lambda: "t = tf.map_fn(lambda e: e * CONF['scale'], t)",
        lambda: "t = tf.cond(tf.reduce_sum(t) > 1.0, lambda: t * (LIMIT[0] + 1), lambda: t - 1.0)",
        lambda: "def side():\n    print('side', n)\n    return t * 2.0\nt = tf.cond(tf.reduce_sum(t) > 0.0, side, lambda: t)",
        lambda: "EMIT(k)",
        lambda: "k = k + ('x' in TABLE) + len(CONF)",
        lambda: "s = s + tsum(tree)",
        lambda: "t = t + tf.reduce_sum(tree.msum(tf.constant(0.5)))",
        lambda: 'print("leaf", leafw(tree))',
        lambda: "t = t * tpick(tree)",
        # A list comprehension over joined recursive calls: an element of tensors built once for
        # all items, one of Python numbers and one that prints (both built per item).
        lambda: "t = t + tf.add_n([tpick(q) * q.tv + 1.0 for q in [tree, tree]])",
        # Loops over enumerate / zip of a list of trees (joined), or of a generator (not joined).
        lambda: (f"qs = [tree, {draw(st.sampled_from(['tree', 'tree.left', 'box.tree']))}]\n"
                 f"for qi, q in enumerate({draw(st.sampled_from(['qs', 'qs, 1', 'iter(qs)']))}):\n"
                 "    t = t + tpick(q) * (qi + 1)"),
        lambda: ("qs, ws = [tree, tree], [0.5, n]\nfor q, qw in zip(qs, ws):\n"
                 "    t = t + tpick(q) * qw"),
        # ... zip with the box's weights, which change between calls.
        lambda: "qs = [tree, tree]\nfor q, qw in zip(qs, box.ws):\n    t = t + tpick(q) * qw",
        lambda: "s = s + sum([tsum(q) * 2 for q in [tree, tree]])",
        lambda: 'k = k + len([print("tp", tpick(q) * 0.5) for q in [tree, tree]])',
        # ... one reading a container item the calls between may change (`box.layers[0].w`).
        lambda: "t = t + tf.add_n([tpick(q) * box.layers[0].w for q in [tree, tree]])",
        # ... one whose helper makes an unused value that fails for some calls.
        lambda: "t = t + tf.add_n([tpeek(tpick(q), abs(k) % 2) for q in [tree, tree]])",
        # Node methods: one that raises on the nodes it is not called on, one with an effect.
        lambda: "t = t + tgap(tree)",
        # Recursions whose frames change dtype: a float64 root over float32 frames, and an int
        # tensor times a base case's Python float (eager raises, or returns the float).
        lambda: "t = t + tf.cast(narrow(tf.cast(t, tf.float64) + 1e-9, tf.constant(abs(k) % 3)), t.dtype)",
        lambda: "LOG.append(repr(fbase(tf.constant(abs(n) % 3), tf.constant(abs(k) % 2))))",
        lambda: "LIMIT[0] = abs(k) % 4\nt = t + tshallow(tree)",
        lambda: "Node.CAP = abs(k) % 4\nt = t + tcapped(tree)",
        lambda: "k = k + (1 if leafw(tree) is True else 2)",
        lambda: "t = t + tf.cast(tf.convert_to_tensor(leafw(tree), dtype_hint=tf.float64), t.dtype)",
        lambda: "t = t + tseen(tree)",
        # The truth of a node and `==` between nodes (None is false; `==` is identity), and a
        # recursion whose calls name an argument or leave it to its default.
        lambda: "t = t + ttruth(tree) + teq(tree)",
        lambda: "t = t + tin(tree)",
        # Node tests are Python bools: `is True`, isinstance, arithmetic, a bool argument passed down.
        lambda: f"t = t + {draw(st.sampled_from(['tnis(tree)', 'tcount(tree)', 'tcount(tree, False)']))}",
        # Comparison chains and `~` on node numbers and on a Python int the frames carry.
        lambda: "t = t + tchain(tree)",
        # A flag and a number every call passes along unchanged: Python values in every frame.
        lambda: f"t = t + tflag(tree, {draw(st.sampled_from(['True', 'False', 'n > 3', 'k % 2 == 0']))})",
        lambda: f"t = t + tdef(tree{draw(st.sampled_from(['', ', 2.0', ', scale=0.5']))})",
        # Numbers the graph is fed (or computes past 32 bits) passed along unchanged or changed.
        lambda: (f"t = t + tf.cast(tshift(tree, {draw(st.sampled_from(['k', 'abs(k) % 4', 'k * 2 ** 20 + 1']))}, "
                 f"{draw(st.sampled_from(['s', '0.5', 'n']))}), t.dtype)"),
        lambda: f"t = t + tf.cast(tdown(tree, {draw(st.sampled_from(['k', 'k * 2 ** 20 + 1', 'abs(k) * 2 ** 29']))}), t.dtype)",
        # Python floats passed down and node numbers: zero divisors, Python's `//`, complex powers.
        lambda: f"t = t + tf.cast(tsdiv(tree, {draw(st.sampled_from(['s', 's - 0.5', 'abs(k) * 0.5', '1.5', '-0.0 * abs(k)']))}), t.dtype)",
        # max/min of the depths the frames return, round and divmod of node numbers.
        lambda: "td = tdepth(tree)\nt = t + tf.cast(td[0], t.dtype) * td[1]",
        # NumPy node numbers (after a mutation) with a float passed down: NumPy's rounding.
        lambda: f"t = t + tf.cast(tnp(tree, {draw(st.sampled_from(['s', '0.3', 'abs(k) * 0.5']))}), t.dtype)",
        # A NumPy int passed down and changed, a NumPy comparison returned (its type logged).
        lambda: f"t = t + tf.cast(tnpacc(tree, np.int32({draw(st.sampled_from(['abs(k) % 7', '3', 'k % 2 ** 20']))})), t.dtype)",
        lambda: f"nb = tnpcmp(tree, np.float32({draw(st.sampled_from(['s', '2.6', 'abs(k) * 0.5']))}))\n"
                "LOG.append(type(nb).__name__)\nk = k + int(nb)",
        # A recursion returning a pair from a leaf and a tensor from other nodes.
        lambda: "rp = tlp(tree)\nt = t + tf.cast(rp[0] if isinstance(rp, tuple) else rp, t.dtype)",
        lambda: "t = t + tf.add_n([tdef(q) for q in [tree, tree]])",
        # Generator expressions over a named batch (joined), beside a `:=` the calls read (not
        # joined), and consumed in part by `any`.
        lambda: "qs = [tree, tree]\nt = t + sum(tdef(q) for q in qs)",
        lambda: "qs, z = [tree, tree], s\nt = t + (z := s * 2.0) * 0.0 + sum(tdef(q, z) for q in qs)",
        lambda: "qs = [tree, tree]\nk = k + any(float(tf.reduce_sum(tdef(q))) > 0.7 for q in qs)",
        lambda: "t = t + tf.cast(tfl(tree), t.dtype)",
        # A node's number given to TensorFlow on its own (eager's dtype: float32 for a float), and
        # added to an int tensor (eager raises for a float); a NumPy array attribute.
        lambda: "t = t + tf.cast(tf.constant(leafw(tree)), t.dtype) + tf.cast(tf.sqrt(leafw(tree) * 1.0), t.dtype)",
        lambda: "LOG.append(tf.convert_to_tensor(leafw(tree)).dtype.name)",
        lambda: "k = k + int(tf.constant(3) + leafw(tree))",
        lambda: "t = t + tf.cast(tf.reduce_sum(tarr(tree) * 2.0 + 1), t.dtype)",
        # A C method of a library object with an effect (a file's write), on every call.
        lambda: "LOG.append(SINK.write('x'))",
        # A recursion whose result is a tensor on some paths and a Python int on others.
        lambda: 'print("mixed", mixed(tf.constant(abs(n) % 4)))',
        # One that passes a Python literal where its root passed a tensor: ackish(tensor 1, j) is
        # the int 2, ackish(tensor 0, j) a tensor; Ackermann's kind also follows the path.
        lambda: 'print("ackish", ackish(tf.constant(abs(n) % 2), tf.constant(abs(k) % 3)))',
        lambda: 'print("ack", ack(tf.constant(abs(n) % 3), tf.constant(abs(k) % 3)))',
        # Python ints a machine holds in int32: past 2**31 (23**7, 50000 * 100000) eager's grow.
        lambda: 'print("bigmul", bigmul(tf.constant(abs(n) % 3), tf.constant(3)))',
        lambda: 'print("grow", grow(tf.constant(abs(n) % 9), 1))',
        lambda: 'print("bigadd", bigadd(tf.constant(abs(n) % 3), 1))',
        lambda: 'print("over", grow(tf.constant(abs(k) % 3), 1) / (abs(n) % 2))',
        lambda: 'print("sum3", sum([grow(tf.constant(abs(k) % 9), 1)] * 3))',
        # A Python int divided by a constant in the machine: eager rounds the quotient once.
        lambda: 'print("sevenths", sevenths(tf.constant(abs(n) % 4), 1))',
        # A root Python int past 32 bits in a table it shares with int32 tensors; `/` of Python ints
        # past 2**53 (Python divides exactly, then rounds once).
        lambda: f'print("thirds", thirds(tf.constant(abs(n) % 4), {draw(st.sampled_from(["k", "k * 2 ** 40 + 5", "2 ** 62"]))}))',
        lambda: f"s = s + (k + 2 ** {draw(st.sampled_from(['60', '20']))}) / 3",
        # Prints replayed after the run: an object whose text your code gives, changed after the
        # print; a deque the function changes after printing it; a variable's text; the text of
        # an object that changes between calls.
        lambda: f"print(SHOWN, [SHOWN])\n{draw(st.sampled_from(['SHOWN.v += 1', 'Shown.seen += 1', 'pass']))}",
        lambda: "dq = collections.deque([k, 1])\nprint(dq)\ndq.appendleft(s)\ndq.rotate(1)",
        lambda: 'print(f"v={box.v}", [box.v])\nbox.v.assign_add(1.0)\nprint(box.v)',
        lambda: "LOG.append(str(SHOWN))",
        # Lists of NumPy numbers made tensors (eager's dtype, or eager's error for mixed bools).
        lambda: "LOG.append(tf.constant([np.float64(s), 1.0]).dtype.name)",
        lambda: f"t = t + tf.cast(tf.reduce_sum({draw(st.sampled_from(['[np.float32(0.5), s]', '[True, np.float32(s)]', '[np.int64(k), 2]']))}), t.dtype)",
        # A gradient through a recursion whose root may be its base case (then eager's is None).
        lambda: ("with tf.GradientTape() as tape:\n    tape.watch(t)\n"
                 "    p = fpow(t, tf.constant(abs(k) % 2))\nLOG.append(tape.gradient(p, t) is None)"),
        lambda: (f"with tf.GradientTape() as tape:\n    tape.watch(t)\n    if {draw(tensor_test())}:\n"
                 f"        g = t * 2.0\n    else:\n        g = {draw(st.sampled_from(['tf.ones_like(t)', 't * 0.0']))}\n"
                 "gr = tape.gradient(g, t)\nLOG.append(gr is None)\nt = t if gr is None else t + gr"),
    ]
    if open_rules:
        choices += [lambda text=text: text for text in OPEN_STATEMENTS]
    if in_loop:
        choices += [lambda: f"if {draw(python_test())}:\n    {draw(st.sampled_from(['break', 'continue']))}",
                    lambda: f"if {draw(tensor_test())}:\n    {draw(st.sampled_from(['break', 'continue']))}"]
    return draw(st.sampled_from(choices))()


def _indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


@st.composite
def block(draw, depth: int, in_loop: bool = False, open_rules: bool = False):
    n = draw(st.integers(1, 3))
    stmts = [draw(statement(depth, in_loop, open_rules)) for _ in range(n)]
    return "\n".join(stmts)


@st.composite
def statement(draw, depth: int, in_loop: bool, open_rules: bool):
    kinds = ["simple"] * 4
    if depth > 0:
        kinds += ["tensor-if", "python-if", "for-range", "for-list", "tensor-while", "early-return", "try-finally",
                  "for-else", "raising-if", "try-except"]
    kind = draw(st.sampled_from(kinds))
    sub = dict(depth=depth - 1, open_rules=open_rules)
    if kind == "simple":
        return draw(simple_statement(in_loop, open_rules))
    if kind == "tensor-if":
        body = draw(block(in_loop=in_loop, **sub))
        orelse = draw(block(in_loop=in_loop, **sub))
        return f"if {draw(tensor_test())}:\n{_indent(body)}\nelse:\n{_indent(orelse)}"
    if kind == "raising-if":            # input validation: a side that changes state, then raises
        body = draw(block(in_loop=in_loop, **sub))
        if draw(st.booleans()):
            return f"if {draw(tensor_test())}:\n{_indent(body)}\n    raise ValueError(f'rejected {{k}}')"
        orelse = draw(block(in_loop=in_loop, **sub))
        return f"if {draw(tensor_test())}:\n{_indent(body)}\nelse:\n{_indent(orelse)}\n    raise ValueError('no')"
    if kind == "python-if":
        body = draw(block(in_loop=in_loop, **sub))
        return f"if {draw(python_test())}:\n{_indent(body)}"
    if kind == "for-range":
        body = draw(block(in_loop=True, **sub))
        bound = draw(st.sampled_from(["3", "abs(n) % 4", "2"]))
        return f"for i in range({bound}):\n{_indent(body)}\n    k = k + i"
    if kind == "for-else":
        body = draw(block(in_loop=True, **sub))
        orelse = draw(block(in_loop=in_loop, **sub))
        return f"for i in range(3):\n{_indent(body)}\nelse:\n{_indent(orelse)}"
    if kind == "for-list":
        body = draw(block(in_loop=True, **sub))
        return f"for v in [1, 2, 3]:\n{_indent(body)}\n    t = t + v"
    if kind == "tensor-while":
        body = draw(block(in_loop=False, **sub))
        return (f"j = tf.constant(0)\nwhile j < tf.constant(abs(n) % 3 + 1):\n{_indent(body)}\n"
                f"    j = j + 1")
    if kind == "try-finally":
        body = draw(block(in_loop=in_loop, **sub))
        final = draw(block(in_loop=False, **sub))
        return f"try:\n{_indent(body)}\nfinally:\n{_indent(final)}"
    if kind == "try-except":            # a caught failure: what the body bound before it stays bound
        body = draw(block(in_loop=in_loop, **sub))
        handler = draw(block(in_loop=in_loop, **sub))
        return (f"try:\n    t = t * 2.0 + tf.reduce_sum(x) * tf.reduce_mean(x) - 1.0\n{_indent(body)}\n"
                f"    t = t + tf.gather(x, k % 5)\nexcept (tf.errors.InvalidArgumentError, ValueError, AssertionError):\n"
                f"    LOG.append(-9)\n{_indent(handler)}")
    return f"if {draw(tensor_test())}:\n    return t, k"


@st.composite
def program(draw, open_rules: bool = False):
    body = draw(block(depth=2, open_rules=open_rules))
    result = draw(st.sampled_from(["t, k, s", "{'t': t, 'k': k}", "[t, s]", "t", "k, s, len(LOG)",
                                   "collections.OrderedDict(t=t, k=k)", "t, VAR",
                                   # library containers that hold what they are given
                                   "collections.deque([t, k])", "types.SimpleNamespace(t=t, k=k)",
                                   "collections.Counter(t=t, k=k)"]))
    rec_write = draw(st.sampled_from(["pass", "box.n += 1", "LOG.append(m)", "COUNT += 1", "Counter.n += 1"]))
    return HEADER.replace("REC_WRITE", rec_write) + _indent(body) + f"\n    return {result}\n"


MUTATIONS = [None, None, None, "box.n += 7", "box.items.append(99)", "LOG.clear()", "TABLE.clear()",
             "box.ws[0] = 1.5", "box.ws.append(3.0)",
             "box.t = box.t + 1.0", "LOG.append(5)", "box.layers[0].w = tf.constant(5.0)", "box.v.assign(3.0)",
             "box.tree.left.w = 7", "box.tree.w = 2.0", "box.tree = Node(0.5, box.tree, None)",
             "box.tree.left.tv = tf.constant(2.0)", "box.tree.w = 2147483000", "box.tree.w = 2 ** 40",
             "box.tree.left.w = True", "box.tree.left.arr = np.arange(2, dtype=np.float32)",
             "box.tree.arr = np.ones(3)", "box.tree.left = Stale(1.5)", "box.tree.right = Doubling(2.5)", "box.tree.left = Half(1.5)",
             "box.tree.left.__dict__ = Plus(vars(box.tree.left))", "box.tree.left.w = tf.constant(2)",
             "setattr(box.tree, 'w?', True)", "box.tree.__depth__ = 9", "box.tree.right = box.tree.left",
             "box.tree.left.is_leaf = lambda: True", "box.tree.left.parent = box.tree",
             "box.tree.w = np.int64(3)", "box.tree.left.w = np.float32(2.5)", "box.tree.w = np.float16(0.3)",
             "box.tree.left.w = np.float64(0.1)", "box.tree.left.w = 'label'", "box.tree.w = 1 + 2j",
             "box.tree = Node(np.float32(0.3), Node(np.float32(2.5)), Node(np.float32(1.1), Node(np.float32(4))))",
             "SHOWN.v = 5", "Shown.seen += 1", "box.lazy = None",
             "box.dense.activation = tf.nn.relu", "box.dense.use_bias = False", "CONF['scale'] = 3.0", "TABLE['x'] = 1",
             "scaled.__defaults__ = (3.0,)", "scaled.__kwdefaults__['shift'] = -1.0",
             "CONF['extra'] = 1.0", "box.hist['a'].append(5)", "box.hist['b'] = [2.0]",
             "box.losses.append(tf.constant(2.5))", "box.losses[-1] = tf.constant(-1.0)", "SCALER_CFG['k'] = 3.0",
             "box.act.negative_slope = 0.05", "box.acc = [tf.ones([2]), tf.zeros([2])]", "box.items = box.acc",
             "box.acc.append(tf.ones([2]))", "box.acc[1] = tf.constant([3.0, 4.0])"]


# How the caller differentiates the call's result by `x`: not at all, or through derivatives
# TensorFlow takes of a graph by functions of its own (nested or persistent tapes, forward mode).
OUTSIDE = [None] * 9 + ["tapes", "persistent", "accumulator"]


@st.composite
def calls(draw):
    """4 to 8 calls; the batch size, values (and so branch directions), dtype and n (now and then a
    float or a scalar tensor) change, and between calls the state may be changed from outside (the same way for
    eager and janus); now and then the caller takes derivatives of the result (`OUTSIDE`)."""
    out = []
    for _ in range(draw(st.integers(4, 8))):
        size = draw(st.sampled_from([2, 2, 3]))
        values = draw(st.lists(st.sampled_from([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0]), min_size=size, max_size=size))
        dtype = draw(st.sampled_from(["float32", "float32", "float32", "float64"]))
        n = draw(st.integers(-5, 40))
        if draw(st.integers(0, 5)) == 0:
            n = n + 0.5          # a float where ints went before (a relaxed int must not take it)
        elif draw(st.integers(0, 7)) == 0:
            n = ("tensor", n)    # a scalar int32 tensor where Python ints went before (the runner makes it)
        elif draw(st.integers(0, 7)) == 0:
            n = (draw(st.sampled_from(["int32", "float32"])), n)    # a NumPy scalar (fed once it varies)
        out.append((values, dtype, n, draw(st.sampled_from(MUTATIONS)), draw(st.sampled_from(OUTSIDE))))
    return out
