//! When a loop goes to rayon's pool. Handing a loop from the routing thread to the pool and
//! waiting for it costs two context switches and leaves the pool's workers spinning on the other
//! core for a while (20-40 µs a loop on the 2-core hosts measured). A routing of a small fabric
//! has two dozen such loops for well under a millisecond of work, so on a 36-switch fabric the
//! hand-overs were most of its time. Below [`INLINE_BELOW`] units of work a loop therefore runs on
//! the calling thread: rayon splits a loop only into pieces of at least `with_min_len` items, and
//! an unsplit loop never leaves the caller. Results do not depend on it (the loops' chunking and
//! merge order are fixed, not taken from how rayon splits).

use rayon::iter::IndexedParallelIterator;

/// Units of work, roughly one (switch, LID) path each, below which a loop stays on the calling
/// thread. (`cargo bench --bench measure -- small`: 2^16 against 2^14 took fattree2:36,2:1 from
/// 4.0-4.1 to 3.6-3.8 ms and director:16,9,2,16-18 from 3.2-3.3 to 2.7-2.8 ms with QoS on;
/// 2^18 made ktree:8,3 slower, 11-12 against 13 ms.)
pub(crate) const INLINE_BELOW: usize = 1 << 16;

/// Whether `work` units are worth handing to the pool.
#[inline]
pub(crate) fn worth_it(work: usize) -> bool {
    work >= INLINE_BELOW
}

/// `iter` kept on the calling thread (one piece) when `work` is below [`INLINE_BELOW`].
#[inline]
pub(crate) fn sized<I: IndexedParallelIterator>(iter: I, work: usize) -> rayon::iter::MinLen<I> {
    let min = if worth_it(work) { 1 } else { iter.len().max(1) };
    iter.with_min_len(min)
}

/// `rayon::join`, or `a` then `b` on the calling thread when `work` is below [`INLINE_BELOW`].
#[inline]
pub(crate) fn join<A, B, RA, RB>(work: usize, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if worth_it(work) {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn small_loops_stay_on_the_calling_thread_and_large_ones_may_leave_it() {
        let here = std::thread::current().id();
        let items: Vec<u32> = (0..1000).collect();
        let threads: Vec<_> = sized(items.par_iter(), 10)
            .map(|_| std::thread::current().id())
            .collect();
        assert!(threads.iter().all(|&t| t == here));
        // Called from outside the pool, a split loop runs on the pool's workers.
        let threads: Vec<_> = sized(items.par_iter(), INLINE_BELOW)
            .map(|_| std::thread::current().id())
            .collect();
        assert!(threads.iter().all(|&t| t != here));
        let (a, b) = join(
            10,
            || std::thread::current().id(),
            || std::thread::current().id(),
        );
        assert_eq!((a, b), (here, here));
        assert_eq!(sized(items.par_iter(), 10).sum::<u32>(), 499_500);
    }
}
