//! [`Table`]: values by small integer id, found in a few instructions;
//! the scheduler keeps its threads in one.
//!
//! Every switch looks threads up by id (the one that parks, the one
//! picked, the one a waker readies). A `BTreeMap` walks each node's keys
//! in order, and the threads a program has just created, having the
//! highest ids, are the last keys of the last leaf: about a hundred
//! instructions per lookup with a few dozen threads.
//!
//! Here the slot of id `i` is `i` modulo the (power-of-two) number of
//! slots, with linear probing from there. Ids are handed out in order,
//! so the live ones spread over the slots without colliding unless the
//! table is nearly full, and it is kept at most half full: a lookup is a
//! mask, a load, a compare. Removal shifts the entries after a hole back
//! (no tombstones), so lookups never get slower with churn.

#![no_std]

extern crate alloc;

use alloc::vec::Vec;

/// Values by `u64` key (a thread's id), in no particular order.
pub struct Table<T> {
    /// `None` or an entry; the length is 0 or a power of two.
    slots: Vec<Option<(u64, T)>>,
    /// Entries in `slots`.
    len: usize,
}

/// Slots of a table's first allocation.
const FIRST_SLOTS: usize = 32;

impl<T> Table<T> {
    /// An empty table (no allocation until the first insert).
    pub const fn new() -> Self {
        Self {
            slots: Vec::new(),
            len: 0,
        }
    }

    /// The slot holding `key`, if any.
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        let mask = self.slots.len().checked_sub(1)?;
        let mut at = key as usize & mask;
        loop {
            match self.slots.get(at)? {
                Some((found, _)) if *found == key => return Some(at),
                Some(_) => at = (at + 1) & mask,
                None => return None,
            }
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<&T> {
        let at = self.find(key)?;
        self.slots[at].as_ref().map(|(_, value)| value)
    }

    /// The value of `key`, to change.
    #[inline]
    pub fn get_mut(&mut self, key: u64) -> Option<&mut T> {
        let at = self.find(key)?;
        self.slots[at].as_mut().map(|(_, value)| value)
    }

    /// Stores `value` under `key`, replacing any value it had.
    pub fn insert(&mut self, key: u64, value: T) {
        if let Some(old) = self.get_mut(key) {
            *old = value;
            return;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = key as usize & mask;
        while self.slots[at].is_some() {
            at = (at + 1) & mask;
        }
        self.slots[at] = Some((key, value));
        self.len += 1;
    }

    /// Doubles the slots (or makes the first ones) and places every entry
    /// again.
    fn grow(&mut self) {
        let count = (self.slots.len() * 2).max(FIRST_SLOTS);
        let mut slots = Vec::with_capacity(count);
        slots.resize_with(count, || None);
        let old = core::mem::replace(&mut self.slots, slots);
        let mask = count - 1;
        for (key, value) in old.into_iter().flatten() {
            let mut at = key as usize & mask;
            while self.slots[at].is_some() {
                at = (at + 1) & mask;
            }
            self.slots[at] = Some((key, value));
        }
    }

    /// Takes `key`'s value out of the table.
    pub fn remove(&mut self, key: u64) -> Option<T> {
        let mut hole = self.find(key)?;
        let (_, value) = self.slots[hole].take()?;
        self.len -= 1;
        // Backward shift: an entry after the hole, up to the next empty
        // slot, moves into the hole if the hole lies on its probe path
        // (between its home slot and where it sits), so that no lookup
        // stops early at the hole.
        let mask = self.slots.len() - 1;
        let mut at = (hole + 1) & mask;
        while let Some((other, _)) = &self.slots[at] {
            let home = *other as usize & mask;
            let distance_now = at.wrapping_sub(home) & mask;
            let distance_to_hole = hole.wrapping_sub(home) & mask;
            if distance_to_hole < distance_now {
                self.slots[hole] = self.slots[at].take();
                hole = at;
            }
            at = (at + 1) & mask;
        }
        Some(value)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.slots
            .iter()
            .filter_map(|slot| slot.as_ref().map(|(key, value)| (*key, value)))
    }
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use alloc::collections::BTreeMap;
    use alloc::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn an_empty_table_finds_nothing_and_removes_nothing() {
        let mut table: Table<u8> = Table::new();
        assert!(table.get(0).is_none());
        assert!(table.remove(7).is_none());
        assert_eq!(table.iter().count(), 0);
    }

    #[test]
    fn keys_on_the_same_home_slot_survive_removals_between_them() {
        let mut table = Table::new();
        // Same home slot in 32 slots: 1, 33, 65; then 2 probes past them.
        for key in [1, 33, 65, 2] {
            table.insert(key, key * 10);
        }
        assert_eq!(table.remove(33), Some(330));
        assert_eq!(table.get(65), Some(&650));
        assert_eq!(table.get(2), Some(&20));
        assert_eq!(table.get(1), Some(&10));
        table.insert(1, 11);
        assert_eq!(table.get(1), Some(&11));
        assert_eq!(table.iter().count(), 3);
    }

    #[derive(Clone, Debug)]
    enum Step {
        Insert(u64, u32),
        Remove(u64),
    }

    fn step() -> impl Strategy<Value = Step> {
        // Keys from a small range collide and wrap; a few large ones too.
        let key = prop_oneof![0u64..200, any::<u64>()];
        prop_oneof![
            (key.clone(), any::<u32>()).prop_map(|(key, value)| Step::Insert(key, value)),
            key.prop_map(Step::Remove),
        ]
    }

    proptest! {
        /// Any sequence of inserts and removals leaves the table holding
        /// exactly what a `BTreeMap` given the same steps holds.
        #[test]
        fn the_table_agrees_with_a_map(steps in proptest::collection::vec(step(), 0..600)) {
            let mut table = Table::new();
            let mut model = BTreeMap::new();
            for step in steps {
                match step {
                    Step::Insert(key, value) => {
                        table.insert(key, value);
                        model.insert(key, value);
                    }
                    Step::Remove(key) => {
                        prop_assert_eq!(table.remove(key), model.remove(&key));
                    }
                }
                for (key, value) in &model {
                    prop_assert_eq!(table.get(*key), Some(value));
                }
            }
            let mut entries: Vec<(u64, u32)> =
                table.iter().map(|(key, value)| (key, *value)).collect();
            entries.sort_unstable();
            let expected: Vec<(u64, u32)> = model.into_iter().collect();
            prop_assert_eq!(entries, expected);
        }
    }
}
