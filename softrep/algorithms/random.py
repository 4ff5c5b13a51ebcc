"""Random draws from Philox words, per element: the algorithm source of
rand, randn and the other draws (docs/training.md, "Random numbers").

Element i of a draw with generator key `key` and draw offset `offset` is a
function of the Philox words of (key, offset, i) alone
(`softrep.primitives.philox.element_words`), so the result never depends on
the device, the thread count or the launch shape.  The CPU launchers
(softrep/cpu/random_ops.py, softrep/cpu/philox.py), the CUDA launchers
(softrep/cuda/random_ops.py, softrep/cuda/philox.py) and the simulator all
call these functions.

Launchers receive the generator's key and the draw's offset as four 32-bit
halves (kernel arguments are int64) and join them with `key_offset`.
"""

import numpy as np

from .math.cos import cos_f32
from .math.log import log_f32
from ..primitives.philox import element_words
from ..primitives.rounding import canonical, fabs, jitable, mul_rn, sqrt_rn, zero

TWO_F32 = np.float32(2.0)
TWO_PI_F32 = np.float32(2.0 * np.pi)  # 2 pi rounded to nearest float32
SCALE_2M24_F32 = np.float32(2.0**-24)
SCALE_2M53_F64 = np.float64(2.0**-53)
SHIFT8 = np.uint64(8)
SHIFT11 = np.uint64(11)
SHIFT21 = np.uint64(21)
ONE_U64 = np.uint64(1)

@jitable
def uniform_f32(w, shift, scale):
    """(w >> shift) * scale: a multiple of 2^-(32-shift) in [0, 1), exact."""
    return mul_rn(np.float32(np.uint64(w) >> np.uint64(shift)), scale)


@jitable
def uniform_f64(w0, w1):
    """53 random bits (w0, then the top 21 bits of w1) times 2^-53: in [0, 1), exact."""
    k = (np.uint64(w0) << SHIFT21) | (np.uint64(w1) >> SHIFT11)
    return mul_rn(np.float64(k), SCALE_2M53_F64)


@jitable
def normal_f32(w0, w1):
    """Box-Muller, cosine branch, in float32 with correctly rounded log and cos:
    u1 = ((w0 >> 8) + 1) 2^-24 in (0, 1], u2 = (w1 >> 8) 2^-24 in [0, 1),
    r = sqrt_rn(|mul_rn(2, log_f32(u1))|), theta = mul_rn(2pi_f32, u2),
    z = mul_rn(r, cos_f32(theta)).  |z| <= sqrt(2 * 24 ln 2) ~ 5.77."""
    u1 = mul_rn(np.float32((np.uint64(w0) >> SHIFT8) + ONE_U64), SCALE_2M24_F32)
    u2 = mul_rn(np.float32(np.uint64(w1) >> SHIFT8), SCALE_2M24_F32)
    # log(u1) <= 0: fabs negates exactly and turns log(1) = +0 into +0 (not -0).
    r = sqrt_rn(fabs(mul_rn(TWO_F32, log_f32(u1))))
    theta = mul_rn(TWO_PI_F32, u2)
    return mul_rn(r, cos_f32(theta))


SHIFT32 = np.uint64(32)


@jitable
def key_offset(key_lo, key_hi, off_lo, off_hi):
    """(key, offset) as uint64 from their low and high 32-bit halves."""
    key = np.uint64(key_lo) | (np.uint64(key_hi) << SHIFT32)
    offset = np.uint64(off_lo) | (np.uint64(off_hi) << SHIFT32)
    return key, offset


@jitable
def store_element_words(out, key, offset, i):
    """out[4i : 4i + 4] = the four Philox words of element i, as int64 (the raw
    draw behind softrep's Generator)."""
    w0, w1, w2, w3 = element_words(key, offset, np.uint64(i))
    out[4 * i] = np.int64(w0)
    out[4 * i + 1] = np.int64(w1)
    out[4 * i + 2] = np.int64(w2)
    out[4 * i + 3] = np.int64(w3)


@jitable
def rand_f32_element(key, offset, i, shift, scale):
    w0, w1, w2, w3 = element_words(key, offset, np.uint64(i))
    return uniform_f32(w0, shift, scale)


@jitable
def rand_f64_element(key, offset, i):
    w0, w1, w2, w3 = element_words(key, offset, np.uint64(i))
    return uniform_f64(w0, w1)


@jitable
def randn_f32_element(key, offset, i):
    w0, w1, w2, w3 = element_words(key, offset, np.uint64(i))
    return normal_f32(w0, w1)


@jitable
def dropout_noise(u, keep, scale):
    """Dropout's multiplier of an element with uniform draw u: `scale` where
    u < keep (the bernoulli draw's exact comparison), +0 where dropped."""
    return scale if u < keep else zero(scale)


@jitable
def dropout_product(x, noise):
    """mul_rn(x, noise), stored as `mul` stores it (canonical NaN)."""
    return canonical(mul_rn(x, noise))
