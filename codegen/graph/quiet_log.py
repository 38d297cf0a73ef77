"""TensorFlow's C++ warnings held back while a speculative graph runs.

When any op of a graph function fails, TensorFlow's runtime logs `Local rendezvous is aborting
with status: ...` to stderr (a C++ warning, for the 1st, 2nd, 4th, 8th ... failure).  A janus
guard that fails is an op that fails, so every assumption that breaks would write janus's own
business into the user's log, where the eager run of the same Python prints nothing; a user op
that fails in the graph is re-run eagerly, which raises it as eager does, again without that
line.  So while janus calls a graph it raises the C++ logging threshold of TensorFlow's runtime
(absl's minimum log level, process-wide: there is no per-thread one) from WARNING to ERROR,
and sets it back after the last concurrent graph call returns.  Errors and fatal messages still
print; a C++ warning another thread logs in that window is held back too.

absl's functions sit in `libtensorflow_framework` under a name that carries absl's release
(`absl::lts_20250814::SetMinLogLevel`), so they are found by pattern in the library file once;
when they are not there (another build of TensorFlow), graphs run with the log as it is.
"""
from __future__ import annotations

import ctypes
import re
import threading
from pathlib import Path

import tensorflow as tf

_ERROR = 2                                   # absl::LogSeverityAtLeast::kError
_SYMBOLS = re.compile(rb"_ZN4absl12lts_\d+(?:11MinLogLevelEv|14SetMinLogLevelENS0_18LogSeverityAtLeastE)")


class _Quiet:
    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = None
        self._functions = None                  # (get, set), False when absl's are not found

    def _resolve(self):
        self._functions = False
        path = Path(tf.sysconfig.get_lib()) / "libtensorflow_framework.so.2"
        try:
            names = {m.decode() for m in _SYMBOLS.findall(path.read_bytes())}
            lib = ctypes.CDLL(str(path))
        except OSError:
            return
        get = next((getattr(lib, n) for n in names if n.endswith("MinLogLevelEv")), None)
        set_ = next((getattr(lib, n) for n in names if "SetMinLogLevel" in n), None)
        if get is None or set_ is None:
            return
        get.restype, get.argtypes = ctypes.c_int, []
        set_.restype, set_.argtypes = None, [ctypes.c_int]
        self._functions = (get, set_)

    def __enter__(self):
        with self._lock:
            if self._functions is None:
                self._resolve()
            if self._functions and self._depth == 0:
                get, set_ = self._functions
                self._saved = get()
                if self._saved < _ERROR:
                    set_(_ERROR)
            self._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._functions and self._depth == 0 and self._saved is not None and self._saved < _ERROR:
                self._functions[1](self._saved)
        return False


QUIET = _Quiet()
