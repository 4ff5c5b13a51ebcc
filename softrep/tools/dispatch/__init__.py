# softrep: no kernels
"""Profile and patch (issue #7): find the aten ops of a model that are not
reproducible (`audit`), and reroute the ones softrep has (`reproducible`,
`patch`).  See docs/patching.md."""

from .audit import AuditMode, Report, audit
from .mode import NotReproducibleError, NotReproducibleWarning, patch, reproducible
from .ops import CLASSES, EXACT, NOT_REPRODUCIBLE, REPRODUCIBLE, classify

__all__ = ["AuditMode", "Report", "audit", "NotReproducibleError", "NotReproducibleWarning", "patch",
           "reproducible", "CLASSES", "EXACT", "NOT_REPRODUCIBLE", "REPRODUCIBLE", "classify"]
