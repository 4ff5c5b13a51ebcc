# softrep: no kernels
"""Progress bars for the long-running tools, shown only on a terminal.

tqdm redraws its bar with carriage returns; written to a log file or a CI
console, a long run leaves hundreds of kilobytes of them.  `bar` is tqdm with
`disable=None`, which turns the bar off when its stream (stderr) is not a
terminal; `enabled=False` turns it off everywhere.
"""

from tqdm import tqdm


def bar(iterable=None, *, enabled=True, **kwargs):
    """A tqdm bar on a terminal, and no output elsewhere."""
    return tqdm(iterable, disable=None if enabled else True, **kwargs)
