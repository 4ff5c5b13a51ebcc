# softrep: no kernels
"""Call sites of aten ops: the user's file:line that caused them.

A forward op has a Python stack: its site is the innermost frame outside torch,
softrep and the standard library.  A backward op runs inside the autograd
engine with no Python frame of its own: its site is that of the forward op
which created the autograd node being executed (torch's anomaly mode keeps the
forward stack of each node in ``node.metadata["traceback_"]``), written
``backward of <Node> at file:line``, or ``backward (<Node>)`` when the forward
stack was not recorded.
"""

import os
import re
import sys
import sysconfig

import torch

_SKIP_DIRS = tuple(os.path.normcase(os.path.realpath(p)) + os.sep for p in {
    os.path.dirname(torch.__file__),
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),  # softrep/
    sysconfig.get_paths()["stdlib"],
})
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _is_user_file(filename):
    if filename.startswith("<") and filename not in ("<stdin>", "<string>"):
        return False
    path = os.path.normcase(os.path.realpath(filename))
    return not path.startswith(_SKIP_DIRS)


def _short(filename, line):
    try:
        rel = os.path.relpath(filename)
        name = filename if rel.startswith(".." + os.sep + "..") else rel
    except ValueError:
        name = filename
    return f"{name}:{line}"


def forward_site():
    """file:line of the innermost user frame of the current Python stack, or '?'."""
    frame = sys._getframe(1)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return _short(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return "?"


def backward_node():
    """The autograd node the engine is executing, or None outside backward."""
    return torch._C._current_autograd_node()


def backward_site(node):
    """'backward of <Node> at file:line' from the node's recorded forward stack."""
    kind = type(node).__name__
    stack = node.metadata.get("traceback_") if hasattr(node, "metadata") else None
    for entry in reversed(stack or ()):
        m = _FRAME.search(entry)
        if m and _is_user_file(m["file"]):
            return f"backward of {kind} at {_short(m['file'], m['line'])}"
    return f"backward ({kind})"


def current_site():
    """(phase, site) of the op being dispatched: ('forward' | 'backward', text)."""
    node = backward_node()
    if node is not None:
        return "backward", backward_site(node)
    return "forward", forward_site()
