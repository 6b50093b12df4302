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
        let words = peers.div_ceil(64);
        Tried {
            inline: 0,
            more: vec![0; words.saturating_sub(1)],
        }
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
                self.more[w - 1] |= bit;
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
}
