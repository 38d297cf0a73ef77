"""What is library code and what is the user's: one definition for all of janus.

The profiler instruments only user functions, codegen converts only user
functions (it calls library functions as they are, on symbolic tensors), a
deferred write refuses only user-defined ``__setattr__`` hooks, and error
locations name the innermost frame that is not library code.  All of them
ask this module.
"""

from __future__ import annotations

import functools
import os
import sys
import types

#: Top-level packages that are never user code.
LIBRARY_PACKAGES = frozenset({
    "tensorflow", "keras", "tf_keras", "numpy", "bytecode", "profiler", "codegen",
    "janus", "_pytest", "pytest", "pluggy", "absl", "google", "jax", "torch",
    "scipy", "sklearn", "optree", "builtins",
})

_BASE_LIB = os.path.join(os.path.realpath(sys.base_prefix), "lib")
_HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_OWN = tuple(os.path.join(_HERE, pkg) + os.sep for pkg in ("profiler", "codegen", "janus"))


@functools.lru_cache(maxsize=4096)
def is_library_file(filename: str) -> bool:
    """True for files of installed packages, the stdlib, or janus itself."""
    if not filename or filename.startswith("<") and filename not in ("<stdin>", "<string>"):
        return filename.startswith("<frozen")
    path = os.path.realpath(filename)
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    if path.startswith(_BASE_LIB + os.sep):
        return True
    return path.startswith(_OWN)


def is_library_module(module: str | None) -> bool:
    """True for modules of the packages above and of the standard library."""
    if not module:
        return False
    top = module.split(".", 1)[0]
    if top == "__main__":
        return False
    return top in LIBRARY_PACKAGES or top in sys.stdlib_module_names


def is_user_code(fn) -> bool:
    """A Python function (or the function of a method) defined outside libraries.

    Functions from tests and ``__main__`` are user code; functions whose module
    is a library package or whose file is an installed package, the
    interpreter's lib, or janus itself, are not."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return False
    if is_library_module(getattr(fn, "__module__", None)):
        return False
    return not is_library_file(code.co_filename)


def is_user_function(fn) -> bool:
    """A plain user function whose source lives in a file, so codegen can convert it
    (functions made by ``exec`` or typed at a prompt are called as they are)."""
    return isinstance(fn, types.FunctionType) and is_user_code(fn) and not fn.__code__.co_filename.startswith("<")
