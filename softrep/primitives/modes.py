"""Rounding modes: one numbering, shared by every layer and passed to kernels as an int.

The first four are IEEE 754's rounding-direction attributes, the only ones the
float32/float64 primitives (`softrep.primitives.rounding`) take; the
low-precision formats (`softrep.primitives.formats`) take all seven.
"""

NEAREST = 0       # roundTiesToEven
DOWN = 1          # roundTowardNegative
UP = 2            # roundTowardPositive
ZERO = 3          # roundTowardZero
NEAREST_AWAY = 4  # roundTiesToAway
ODD = 5           # round to odd (sticky bit ORed into the last place)
STOCHASTIC = 6    # up with probability (x - down) / ulp, from Philox words

BY_NAME = {"nearest": NEAREST, "down": DOWN, "up": UP, "zero": ZERO,
           "nearest_away": NEAREST_AWAY, "odd": ODD, "stochastic": STOCHASTIC}
