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


_TORCH_DIR = os.path.normcase(os.path.realpath(os.path.dirname(torch.__file__))) + os.sep
_STDLIB_DIR = os.path.normcase(os.path.realpath(sysconfig.get_paths()["stdlib"])) + os.sep
_SOFTREP_DIR = os.path.normcase(os.path.realpath(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))) + os.sep
_SOFTREP_TOOLS_DIR = _SOFTREP_DIR + "tools" + os.sep


def softrep_caller():
    """The module path (e.g. 'softrep/nn/functional/sparse.py') when the innermost
    frame outside torch belongs to softrep's own ops (any package but
    softrep/tools), else None.  softrep's ops use some torch ops that are exact
    only by the way softrep calls them (an index_put_ whose positions are distinct
    by construction); their bits are those softrep's own tests pin on the CPU and
    the CUDA simulator."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<"):
            path = os.path.normcase(os.path.realpath(name))
            if path.startswith(_SOFTREP_DIR):
                if not path.startswith(_SOFTREP_TOOLS_DIR):
                    return "softrep/" + os.path.relpath(path, _SOFTREP_DIR).replace(os.sep, "/")
            elif not path.startswith((_TORCH_DIR, _STDLIB_DIR)):
                return None
        frame = frame.f_back
    return None


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
