//! Disjoint sets over dense indices (union-find with path halving). The smaller root wins a
//! union, so every class is named by its smallest member and classes come out in index order:
//! results built on it stay deterministic.

pub struct UnionFind(Vec<u32>);

impl UnionFind {
    /// `n` singleton classes `0..n`.
    pub fn new(n: usize) -> Self {
        UnionFind((0..n as u32).collect())
    }

    /// The smallest member of `x`'s class.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let up = self.0[self.0[x as usize] as usize];
            self.0[x as usize] = up;
            x = up;
        }
        x
    }

    /// Joins the classes of `a` and `b`; false if they were one already.
    pub fn union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.0[ra.max(rb) as usize] = ra.min(rb);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::UnionFind;

    #[test]
    fn classes_are_named_by_their_smallest_member() {
        let mut u = UnionFind::new(6);
        assert!(u.union(4, 2));
        assert!(u.union(5, 4));
        assert!(!u.union(2, 5));
        assert!(u.union(3, 1));
        assert_eq!((u.find(5), u.find(4), u.find(3), u.find(0)), (2, 2, 1, 0));
    }
}
