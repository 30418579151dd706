"""MT19937 with the libstdc++ distributions LoadGen uses, vectorised with numpy.

Bit-exact with ``std::mt19937`` + libstdc++ (spec section 2.2):

* seeding: ``init_genrand(seed mod 2**32)``;
* ``uniform_int_distribution``: Lemire's nearly-divisionless method on one
  32-bit draw (``product = draw * range``; reject while ``low32 < (2**32 - range) % range``);
* ``std::shuffle``: when ``(2**32 - 1) // n >= n`` it places two elements per
  draw (one 0/1 draw first for even ``n``), else one ``uniform_int`` per element;
* ``generate_canonical<double, 53>``: two draws, ``(a + b * 2**32) / 2**64``.

Draws are taken from a buffer, so a rejected draw consumes exactly one value,
as in C++, while accepted draws are processed as whole arrays.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_TWO32 = 1 << 32
_CHUNK = 4096  # draws examined per vector step; bounds the work a rejection wastes
_BIG_CHUNK = 1 << 20  # for a constant range rejections are rare: bigger steps
_MASK32 = np.uint64(0xFFFFFFFF)


class MT19937Stream:
    """A ``std::mt19937`` seeded like C++, read through a draw buffer."""

    def __init__(self, seed: int) -> None:
        legacy = np.random.RandomState(seed % _TWO32)  # legacy seeding = init_genrand
        self._bitgen = np.random.MT19937()
        self._bitgen.state = {
            "bit_generator": "MT19937",
            "state": legacy.get_state(legacy=False)["state"],
        }
        self._buf: U64 = np.empty(0, dtype=np.uint64)
        self._pos = 0

    def peek(self, n: int) -> U64:
        """The next ``n`` raw 32-bit draws, not yet consumed."""
        available = self._buf.shape[0] - self._pos
        if available < n:
            fresh = self._bitgen.random_raw(max(n - available, _CHUNK))
            self._buf = np.concatenate((self._buf[self._pos :], fresh))
            self._pos = 0
        return self._buf[self._pos : self._pos + n]

    def advance(self, n: int) -> None:
        """Consume ``n`` draws."""
        self._pos += n

    def draws(self, n: int) -> U64:
        """Consume and return ``n`` raw draws."""
        out = self.peek(n).copy()
        self.advance(n)
        return out

    def uniform_ints(self, ranges: U64) -> U64:
        """One ``uniform_int_distribution(0, r - 1)`` draw per element of ``ranges``."""
        m = int(ranges.shape[0])
        out = np.empty(m, dtype=np.uint64)
        thresholds = (np.uint64(_TWO32) - ranges) % ranges
        k = 0
        while k < m:
            step = min(m - k, _CHUNK)
            raw = self.peek(step)
            product = raw * ranges[k : k + step]
            rejected = (product & _MASK32) < thresholds[k : k + step]
            j = int(np.argmax(rejected)) if bool(rejected.any()) else step
            out[k : k + j] = product[:j] >> np.uint64(32)
            k += j
            self.advance(j + (1 if j < step else 0))
        return out

    def uniform_int(self, upper: int, n: int) -> U64:
        """``n`` draws of ``uniform_int_distribution(0, upper)`` (inclusive)."""
        span = np.uint64(upper + 1)
        threshold = np.uint64((_TWO32 - (upper + 1)) % (upper + 1))
        out = np.empty(n, dtype=np.uint64)
        k = 0
        while k < n:
            step = min(n - k, _BIG_CHUNK)
            product = self.peek(step) * span
            rejected = (product & _MASK32) < threshold
            j = int(np.argmax(rejected)) if bool(rejected.any()) else step
            out[k : k + j] = product[:j] >> np.uint64(32)
            k += j
            self.advance(j + (1 if j < step else 0))
        return out

    def canonical(self, n: int) -> npt.NDArray[np.float64]:
        """``n`` values of ``generate_canonical<double, 53>`` (two draws each)."""
        raw = self.draws(2 * n)
        total = raw[0::2].astype(np.float64) + raw[1::2].astype(np.float64) * float(
            _TWO32
        )
        u = total / float(_TWO32 * _TWO32)
        return np.minimum(u, np.nextafter(1.0, 0.0))

    def exponential_ns(self, rate: float, n: int) -> I64:
        """``n`` Poisson gaps: ``trunc_ns(-log(1 - u) / rate)`` as LoadGen's Server schedule."""
        u = self.canonical(n)
        seconds = -np.log(1.0 - u) / rate
        scaled = seconds * 1e9
        gaps = scaled.astype(np.int64)  # duration_cast truncates toward zero
        _repair_log_rounding(u, rate, scaled, gaps)
        return gaps

    def shuffle(self, values: npt.NDArray[np.int64]) -> None:
        """In-place ``std::shuffle`` exactly as libstdc++ does it."""
        n = int(values.shape[0])
        if n <= 1:
            return
        if (_TWO32 - 1) // n >= n:
            self._shuffle_pairwise(values, n)
        else:
            ranges = np.arange(
                2, n + 1, dtype=np.uint64
            )  # i - first + 1 for i = 1..n-1
            positions = self.uniform_ints(ranges).astype(np.int64).tolist()
            data = values.tolist()
            for i, j in enumerate(positions, start=1):
                data[i], data[j] = data[j], data[i]
            values[:] = data

    def _shuffle_pairwise(self, values: npt.NDArray[np.int64], n: int) -> None:
        data = values.tolist()
        i = 1
        if n % 2 == 0:
            j = int(self.uniform_int(1, 1)[0])
            data[1], data[j] = data[j], data[1]
            i = 2
        swap_ranges = np.arange(i + 1, n, 2, dtype=np.uint64)  # current index + 1
        draws = self.uniform_ints(swap_ranges * (swap_ranges + np.uint64(1)))
        firsts = (draws // (swap_ranges + np.uint64(1))).tolist()
        seconds = (draws % (swap_ranges + np.uint64(1))).tolist()
        for a, b in zip(firsts, seconds, strict=True):
            data[i], data[a] = data[a], data[i]
            data[i + 1], data[b] = data[b], data[i + 1]
            i += 2
        values[:] = data


def _repair_log_rounding(
    u: npt.NDArray[np.float64],
    rate: float,
    scaled: npt.NDArray[np.float64],
    gaps: I64,
) -> None:
    """Recompute with the C library's ``log`` where numpy's could round differently.

    numpy may use its own SIMD ``log``; it can differ from glibc in the last
    bit. That only matters when the value lies next to an integer nanosecond,
    so those few elements are recomputed with ``math.log`` (glibc).
    """
    frac = scaled - np.floor(scaled)
    near = np.nonzero((frac < 1e-6) | (frac > 1 - 1e-6))[0]
    for i in near.tolist():
        gaps[i] = int(-math.log(1.0 - float(u[i])) / rate * 1e9)
