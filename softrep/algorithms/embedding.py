"""embedding's per-element code that the CPU kernels run (softrep/cpu/embedding.py).

The forward copies table rows: a copy is exact, and every NaN is stored as
the canonical NaN (docs/order.md, "Embedding"), the bits of the torch-op
path's `canonical_nan`.  The backward's sums are the documented sum's steps
(`VALUES`, softrep.algorithms.reduction) and the batch tree's (`tree_slot`,
`tree_carry`, `tree_finish`, softrep.algorithms.products): nothing of their
own.
"""

from ..primitives.rounding import canonical, jitable


@jitable
def row_value(x):
    """An element of a copied table row: x itself, any NaN the canonical NaN."""
    return canonical(x)
