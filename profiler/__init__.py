"""profiler: what happened when a function ran.

Instruments user bytecode with probes, runs one call, and returns facts keyed
by source span (see ``profile.py`` for the data model, ``run.py`` for the
entry point).  Imports no TensorFlow and no other janus package.
"""

from profiler.profile import (BranchInstance, FunctionProfile, Profile, Site, SiteKind,
                              Span, ValueFact, code_key)
from profiler.run import profile_call, profiling

__all__ = ["Profile", "FunctionProfile", "Site", "SiteKind", "ValueFact",
           "BranchInstance", "Span", "code_key", "profile_call", "profiling"]
