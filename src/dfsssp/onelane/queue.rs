//! The one-lane search's priority queue: one entry per switch, its cheapest candidate, keyed
//! `(cost, switch, channel)` packed in a `u128` ([`pack`]) so that keys compare as one integer
//! in the lexicographic order of the triple.
//!
//! A switch whose candidate gets cheaper has its entry lowered in place (an indexed 4-ary heap)
//! instead of a second entry pushed beside the stale one: the queue never holds more than the
//! component's switches, and every pop is a switch to settle. The keys are those a binary heap
//! of every candidate would pop, in the same order (each switch's least key is the only one of
//! its keys that can be the minimum), so the routes are the same. Cost: `O(log_4 S)` per
//! lowered or inserted entry and per pop.

/// `(cost, switch, channel)` as one key whose order is theirs, lexicographic.
#[inline(always)]
pub(super) fn pack(cost: u64, switch: u32, chan: u32) -> u128 {
    u128::from(cost) << 64 | u128::from(switch) << 32 | u128::from(chan)
}

#[inline(always)]
pub(super) fn unpack(key: u128) -> (u64, u32, u32) {
    ((key >> 64) as u64, (key >> 32) as u32, key as u32)
}

/// Heap position of a switch that has no entry.
const ABSENT: u32 = u32::MAX;

/// Children per heap node: a shallower heap than a binary one, its children on one or two cache
/// lines.
const ARITY: usize = 4;

pub(super) struct SwitchQueue {
    heap: Vec<u128>,
    /// Per switch, the index of its entry in `heap`, or [`ABSENT`].
    pos: Vec<u32>,
}

impl SwitchQueue {
    pub fn new(num_switches: usize) -> Self {
        SwitchQueue {
            heap: Vec::with_capacity(num_switches),
            pos: vec![ABSENT; num_switches],
        }
    }

    /// Empties the queue (`O(entries)`).
    pub fn clear(&mut self) {
        for &k in &self.heap {
            self.pos[unpack(k).1 as usize] = ABSENT;
        }
        self.heap.clear();
    }

    /// Enters `key`'s switch with `key`, or lowers its entry to `key`, which must be below it.
    #[inline(always)]
    pub fn push_or_lower(&mut self, key: u128) {
        let s = unpack(key).1 as usize;
        let i = match self.pos[s] {
            ABSENT => {
                self.heap.push(key);
                self.heap.len() - 1
            }
            i => {
                debug_assert!(key < self.heap[i as usize], "a key may only be lowered");
                self.heap[i as usize] = key;
                i as usize
            }
        };
        self.sift_up(i, key);
    }

    /// Takes out the least key.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<u128> {
        let top = *self.heap.first()?;
        self.pos[unpack(top).1 as usize] = ABSENT;
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            self.sift_down(0, last);
        }
        Some(top)
    }

    /// Puts `key` at `i` or above, moving the greater parents down.
    #[inline(always)]
    fn sift_up(&mut self, mut i: usize, key: u128) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if p <= key {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, key);
    }

    /// Puts `key` at `i`, its switch's position with it.
    #[inline(always)]
    fn place(&mut self, i: usize, key: u128) {
        self.heap[i] = key;
        self.pos[unpack(key).1 as usize] = i as u32;
    }

    /// Puts `key` at `i` or below, moving the least children up.
    #[inline(always)]
    fn sift_down(&mut self, mut i: usize, key: u128) {
        let n = self.heap.len();
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let (mut c, mut least) = (first, self.heap[first]);
            for j in first + 1..(first + ARITY).min(n) {
                if self.heap[j] < least {
                    (c, least) = (j, self.heap[j]);
                }
            }
            if key <= least {
                break;
            }
            self.place(i, least);
            i = c;
        }
        self.place(i, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Against a binary heap of every key pushed (the lazy queue it replaces): the same keys
    /// popped in the same order, each switch's stale keys skipped.
    #[test]
    fn pops_what_a_heap_of_every_candidate_pops() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..200 {
            let ns = 1 + round % 40;
            let mut q = SwitchQueue::new(ns);
            let mut lazy = std::collections::BinaryHeap::new();
            let mut best = vec![u128::MAX; ns];
            let mut settled = vec![false; ns];
            let mut popped = (Vec::new(), Vec::new());
            for _ in 0..rng.gen_range(1..200) {
                if rng.gen_bool(0.3) {
                    popped.0.extend(q.pop());
                    while let Some(std::cmp::Reverse(k)) = lazy.pop() {
                        let s = unpack(k).1 as usize;
                        if !settled[s] && best[s] == k {
                            settled[s] = true;
                            popped.1.push(k);
                            break;
                        }
                    }
                    if let Some(&k) = popped.0.last() {
                        settled[unpack(k).1 as usize] = true;
                    }
                    continue;
                }
                let s = rng.gen_range(0..ns as u32);
                let key = pack(rng.gen_range(0..50), s, rng.gen_range(0..8));
                if settled[s as usize] || key >= best[s as usize] {
                    continue;
                }
                best[s as usize] = key;
                q.push_or_lower(key);
                lazy.push(std::cmp::Reverse(key));
            }
            assert_eq!(popped.0, popped.1, "round {round}");
            q.clear();
            assert!(q.pop().is_none());
            assert!(q.pos.iter().all(|&p| p == ABSENT));
        }
    }
}
