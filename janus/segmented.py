"""Graph breaks: a function that cannot be one graph runs as graph segments with Python between.

When a build fails at a line of the function itself for a reason only Python can handle (a
tensor's value needed in Python, a per-call value such as `random.random()`, a `try/except`),
janus splits the function there (`codegen.segments`): the statement with that line, and the
`for`/`while`/`if`/`with` around it, run in Python; each run of statements between them is a
segment, speculated on its own, with its own guards, fallback and report.  A segment commits
its state writes when its graph succeeded, in program order, so a guard failing in a later
segment re-runs only that segment in Python; the segments before it have committed, as eager
would have done by then.  A segment that meets a break of its own adds its line to the split of
the function, which is split again from its source.
"""
from __future__ import annotations

import threading

import tensorflow as tf

from codegen.errors import Reason
from codegen.segments import CannotSplit, split_function

# Reasons whose statement can run in Python between graph segments.
BREAKS = {"python-value-of-tensor", "per-call-value", "python-call", "numpy-array", "loop-exit", "try-except",
          "import", "class-def", "match", "context-manager", "object-dict", "seeded-random",
          "outside-container",
          # Python state written, or a print, inside a tensor `if` or loop that no graph output can
          # carry: that `if` or loop runs in Python, on the values the segment before it computed.
          "write-in-tf.cond", "write-in-tf.while_loop", "print-in-general-lowering"}


class Segmented:
    """The driver that runs in place of the function, its segments, and the breaks between.  A
    segment that meets a break of its own asks this split to add that line (`add_break`): the
    function is split again from its source, so Python parts never nest."""

    def __init__(self, fn, make):
        self.fn, self.make = fn, make
        self.lines: set[int] = set()
        self.breaks: list[Reason] = []
        self.driver = None
        self.segments: list = []          # [(codegen Segment, speculated function)]
        self.refused: Reason | None = None  # why the function itself cannot be split, if it cannot
        self._lock = threading.Lock()     # segments on two threads may meet breaks at once

    def split_at(self, line: int, reason: Reason) -> bool:
        with self._lock:
            try:
                driver, segments = split_function(self.fn, self.lines | {line}, lambda f: _runner(self.make(f)))
            except CannotSplit as exc:
                if exc.refusal is not None:
                    r = exc.refusal
                    self.refused = Reason(r.kind, f"{self.fn.__code__.co_filename}:{r.line}", r.explanation, r.hint)
                return False
            except Exception:        # noqa: BLE001 - a split that fails to compile leaves the function whole
                return False
            self.lines.add(line)
            self.breaks.append(reason)
            self.driver, self.segments = driver, [(seg, runner.spec) for seg, runner in segments]
            for _, spec in self.segments:
                spec.parent_split = self
            return True

    def add_break(self, segment_fn, reason: Reason, exc) -> bool:
        """A segment's build failed for `reason`: split the function there too; False when the
        line is not the function's or nothing is left to split (the segment then decides)."""
        line = break_line(segment_fn, reason, exc)
        return line is not None and line not in self.lines and self.split_at(line, reason)

    def graph_runs(self) -> int:
        """Graph runs of the current segments (and of a segment's own split, if it has one)."""
        stats = [spec.stats() for _, spec in self.segments]
        return sum(st["graph_runs"] + st["segment_graph_runs"] for st in stats)


def break_line(fn, reason: Reason, exc=None) -> int | None:
    """The line of the function's own body where the build failed for `reason`: the line the
    reason names, or else the innermost line of the function in the failed build's traceback
    (the builder's frames carry the function's file and lines: a break inside a called helper
    splits at the call); None when there is none."""
    if reason.kind not in BREAKS:
        return None
    code = fn.__code__
    lines = [ln for _, _, ln in code.co_lines() if ln is not None]
    if not lines:
        return None
    inside = lambda filename, line: filename == code.co_filename and min(lines) <= line <= max(lines)  # noqa: E731
    filename, _, line = reason.where.rpartition(":")
    if line.isdigit() and inside(filename, int(line)):
        return int(line)
    seen, found = set(), None
    while exc is not None and id(exc) not in seen:      # the innermost frame of the builder's code
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            if inside(tb.tb_frame.f_code.co_filename, tb.tb_lineno):
                found = tb.tb_lineno
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
    return found


def try_split(fn, reason: Reason, exc, make) -> tuple[Segmented | None, Reason | None]:
    """`fn` split where the build failed for `reason` (raised as `exc`), its segments made by
    `make(function)`; None when that is not in `fn` or no part around it can be a graph, with
    the reason when `fn` itself cannot be split (a variable its closures share, a read of its
    frame: `codegen.syntax.frames`)."""
    line = break_line(fn, reason, exc)
    segmented = Segmented(fn, make)
    if line is not None and segmented.split_at(line, reason):
        return segmented, None
    return None, segmented.refused


def _runner(spec):
    """What the driver calls for a segment: its speculated function, except when it is handed a
    `tf.GradientTape`, which records only the eager operations of the code that holds it."""
    def run(*args):
        if any(isinstance(a, tf.GradientTape) for a in args):
            return spec.python_function(*args)
        return spec(*args)
    run.spec = spec
    return run
