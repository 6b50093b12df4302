//! The per-request `tried` bitmap: one machine word inline for up to 64 peers, as nginx does,
//! spilling to the heap only for larger groups.

/// Which peers of the current list this request has already tried.
#[derive(Debug, Clone, Default)]
pub struct Tried {
    inline: u64,
    more: Vec<u64>,
}

impl Tried {
    pub fn new(peers: usize) -> Self {
        let mut t = Tried::default();
        t.reset(peers);
        t
    }

    /// Clear every bit and make room for `peers` peers, reusing the spilled words.
    pub fn reset(&mut self, peers: usize) {
        let words = peers.div_ceil(64).saturating_sub(1);
        self.inline = 0;
        self.more.clear();
        self.more.resize(words, 0);
    }

    pub fn contains(&self, i: usize) -> bool {
        let bit = 1u64 << (i % 64);
        match i / 64 {
            0 => self.inline & bit != 0,
            w => self.more.get(w - 1).is_some_and(|x| x & bit != 0),
        }
    }

    pub fn insert(&mut self, i: usize) {
        let bit = 1u64 << (i % 64);
        match i / 64 {
            0 => self.inline |= bit,
            w => {
                if self.more.len() < w {
                    self.more.resize(w, 0);
                }
                if let Some(x) = self.more.get_mut(w - 1) {
                    *x |= bit;
                }
            }
        }
    }

    pub fn clear(&mut self) {
        self.inline = 0;
        self.more.iter_mut().for_each(|w| *w = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_spilled_bits() {
        let mut t = Tried::new(130);
        for i in [0, 5, 63, 64, 100, 129] {
            assert!(!t.contains(i));
            t.insert(i);
            assert!(t.contains(i));
        }
        assert!(!t.contains(1) && !t.contains(65) && !t.contains(128));
        t.clear();
        assert!(!t.contains(100) && !t.contains(0));
    }

    #[test]
    fn grows_when_sized_too_small() {
        let mut t = Tried::new(1);
        t.insert(200);
        assert!(t.contains(200));
        assert!(!t.contains(199));
    }

    #[test]
    fn reset_clears_and_resizes() {
        let mut t = Tried::new(200);
        t.insert(150);
        t.insert(3);
        t.reset(200);
        assert!(!t.contains(150) && !t.contains(3));
        t.reset(10);
        assert!(!t.contains(150));
    }
}
