"""Progress bars are drawn on a terminal only: a log gets no carriage returns."""

import io
import subprocess
import sys

from softrep.tools.progress import bar


def test_no_bar_when_the_stream_is_not_a_terminal():
    out = io.StringIO()
    for _ in bar(range(1000), file=out, mininterval=0):
        pass
    assert out.getvalue() == ""


def test_bar_can_be_turned_off_and_is_drawn_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    on, off = Terminal(), Terminal()
    for _ in bar(range(10), file=on, mininterval=0):
        pass
    for _ in bar(range(10), file=off, enabled=False):
        pass
    assert "\r" in on.getvalue() and off.getvalue() == ""


def test_demo_log_has_no_carriage_returns():
    """`python -m softrep demo` with its output going to a file (one epoch)."""
    run = subprocess.run([sys.executable, "-m", "softrep", "demo", "--epochs", "1"], capture_output=True, text=True,
                         timeout=900)
    assert "\r" not in run.stdout + run.stderr
