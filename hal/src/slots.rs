//! Equal slots of a virtual region (generated code's, linear memories'),
//! taken and given back one bit each: the lowest free slot first, so the
//! page tables made for a slot serve the next one taken.

/// A set of `count` slots, at most `WORDS * 64`.
pub(crate) struct Slots<const WORDS: usize> {
    taken: spin::Mutex<[u64; WORDS]>,
    count: usize,
}

impl<const WORDS: usize> Slots<WORDS> {
    /// `count` free slots.
    pub(crate) const fn new(count: usize) -> Self {
        assert!(count <= WORDS * 64);
        Slots {
            taken: spin::Mutex::new([0; WORDS]),
            count,
        }
    }

    /// The lowest free slot, now taken; `None` when all are.
    pub(crate) fn take(&self) -> Option<usize> {
        let mut taken = self.taken.lock();
        let (word, bits) = taken
            .iter_mut()
            .enumerate()
            .find(|(_, bits)| **bits != u64::MAX)?;
        let bit = bits.trailing_ones() as usize;
        let slot = word * 64 + bit;
        if slot >= self.count {
            return None;
        }
        *bits |= 1 << bit;
        Some(slot)
    }

    /// Gives `slot` back.
    pub(crate) fn release(&self, slot: usize) {
        self.taken.lock()[slot / 64] &= !(1 << (slot % 64));
    }
}
