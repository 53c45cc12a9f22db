//! Bit sets over `u64` words (bit `i` is bit `i % 64` of word `i / 64`): the LID study's split
//! graphs, and the per-edge sets that keep DFSSSP's cycle searches and checks in cache.

/// Words for `n` bits.
#[inline]
pub(crate) fn words(n: usize) -> usize {
    n.div_ceil(64)
}

#[inline]
pub(crate) fn bit(s: &[u64], i: usize) -> bool {
    s[i >> 6] >> (i & 63) & 1 == 1
}

#[inline]
pub(crate) fn set(s: &mut [u64], i: usize) {
    s[i >> 6] |= 1 << (i & 63);
}

#[inline]
pub(crate) fn clear(s: &mut [u64], i: usize) {
    s[i >> 6] &= !(1 << (i & 63));
}

/// Bit `i` and the bits above it in its word, as the low bits of the result (a scan skips the
/// clear ones with `trailing_zeros`).
#[inline]
pub(crate) fn from(s: &[u64], i: usize) -> u64 {
    s[i >> 6] >> (i & 63)
}

/// The set bits, ascending.
pub(crate) fn ones(s: &[u64]) -> impl Iterator<Item = usize> + '_ {
    s.iter().enumerate().flat_map(|(wi, &w)| {
        let mut w = w;
        std::iter::from_fn(move || {
            (w != 0).then(|| {
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                wi * 64 + b
            })
        })
    })
}
