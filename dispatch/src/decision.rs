//! The declarative-guard compiler.
//!
//! SPIN evaluated every guard on every raise, so 50 UDP port guards cost 50
//! calls (events paper 003 §3.2, table 2: "we presently do not optimize the
//! guard decision tree, which would be effective for the port comparison").
//! Spindle compiles the declarative guards of all handlers of an event into
//! lookup tables, rebuilt with the handler list on every change:
//!
//! - each handler contributes one *key* predicate: its first `Equals` or
//!   `Masked` guard, else its first `InRange` guard; handlers without one are
//!   *unindexed* and always candidates;
//! - `Equals` and `Masked` keys on the same field and mask share one sorted
//!   table (`field & mask` → handlers), searched in O(log N);
//! - `InRange` keys on the same field share an interval table: the number
//!   line cut at every range boundary, each piece listing the handlers whose
//!   range covers it, searched in O(log N);
//! - a raise looks each table up once and merges the (already sorted)
//!   position lists, so the candidates come out in handler order (no merge
//!   at all in the common case of one list). A candidate's key predicate
//!   holds by construction, so the dispatcher evaluates only its other
//!   guards; the result is exactly that of evaluating all guards naively
//!   (property tests below).
//!
//! Guards are side-effect free (003 §2.3), which is what allows skipping
//! them.

use alloc::{vec, vec::Vec};

use crate::guard::{Field, Predicate, Test};

/// How many position lists a raise merges at most (1 unindexed + tables);
/// beyond this the dispatcher falls back to evaluating every handler.
pub(crate) const MAX_MERGE: usize = 16;

enum Kind {
    /// `field & mask` → positions; `keys` sorted, key `k`'s positions are
    /// `positions.get(k)`.
    Masked {
        mask: u64,
        keys: Vec<u64>,
        positions: Positions,
    },
    /// Piece `k` covers `[starts[k], starts[k + 1])`; `starts[0] == 0`.
    Ranges {
        starts: Vec<u64>,
        positions: Positions,
    },
}

/// Position lists stored back to back: list `k` is
/// `flat[spans[k].0..spans[k].1]`. One allocation for all lists, one
/// indirection per lookup.
#[derive(Default)]
struct Positions {
    spans: Vec<(u32, u32)>,
    flat: Vec<u32>,
}

impl Positions {
    fn push(&mut self, list: impl IntoIterator<Item = u32>) {
        let start = self.flat.len() as u32;
        self.flat.extend(list);
        self.spans.push((start, self.flat.len() as u32));
    }

    /// Adds a position to the last list.
    fn extend_last(&mut self, position: u32) {
        self.flat.push(position);
        if let Some(span) = self.spans.last_mut() {
            span.1 = self.flat.len() as u32;
        }
    }

    #[inline]
    fn get(&self, k: usize) -> &[u32] {
        match self.spans.get(k) {
            Some(&(start, end)) => self.flat.get(start as usize..end as usize).unwrap_or(&[]),
            None => &[],
        }
    }
}

struct Table {
    field: Field,
    kind: Kind,
}

/// The compiled form of the declarative guards of one handler list.
pub(crate) struct DecisionIndex {
    unindexed: Vec<u32>,
    tables: Vec<Table>,
}

/// Equals/Masked keys being grouped: (field, mask) → (key, position).
type MaskedKeys = Vec<((Field, u64), Vec<(u64, u32)>)>;
/// InRange keys being grouped: field → (low, high, position).
type RangeKeys = Vec<(Field, Vec<(u64, u64, u32)>)>;

/// The key predicate a handler is indexed by, if any. A handler reached
/// through the index has its key predicate true by construction (the lookup
/// matched it), so the dispatcher does not evaluate it again.
pub(crate) fn key_of(predicates: &[Predicate]) -> Option<Predicate> {
    predicates
        .iter()
        .find(|p| matches!(p.test, Test::Equals(_) | Test::Masked { .. }))
        .or_else(|| {
            predicates
                .iter()
                .find(|p| matches!(p.test, Test::InRange { .. }))
        })
        .copied()
}

impl DecisionIndex {
    /// Builds the index from each handler's declarative predicates, given in
    /// handler order (position = index in the iterator). Returns `None` when
    /// no handler has a declarative guard: a plain scan is then cheapest.
    pub(crate) fn build<'a>(entries: impl Iterator<Item = &'a [Predicate]>) -> Option<Self> {
        let mut unindexed = Vec::new();
        // (field, mask) → (key, position), and field → (low, high, position).
        let mut masked: MaskedKeys = Vec::new();
        let mut ranges: RangeKeys = Vec::new();
        let mut any_key = false;
        for (position, predicates) in entries.enumerate() {
            let position = position as u32;
            match key_of(predicates) {
                None => unindexed.push(position),
                Some(Predicate { field, test }) => {
                    any_key = true;
                    match test {
                        Test::Equals(v) => push_masked(&mut masked, (field, u64::MAX), v, position),
                        Test::Masked { mask, value } => {
                            push_masked(&mut masked, (field, mask), value, position)
                        }
                        Test::InRange { low, high } => {
                            match ranges.iter_mut().find(|(f, _)| *f == field) {
                                Some((_, list)) => list.push((low, high, position)),
                                None => ranges.push((field, vec![(low, high, position)])),
                            }
                        }
                    }
                }
            }
        }
        if !any_key {
            return None;
        }
        let mut tables = Vec::new();
        for ((field, mask), mut list) in masked {
            // Stable sort by key keeps positions ascending within a key.
            list.sort_by_key(|&(key, _)| key);
            let mut keys: Vec<u64> = Vec::new();
            let mut positions = Positions::default();
            for (key, position) in list {
                if keys.last() == Some(&key) {
                    positions.extend_last(position);
                } else {
                    keys.push(key);
                    positions.push([position]);
                }
            }
            tables.push(Table {
                field,
                kind: Kind::Masked {
                    mask,
                    keys,
                    positions,
                },
            });
        }
        for (field, list) in ranges {
            let mut starts: Vec<u64> = vec![0];
            for &(low, high, _) in &list {
                starts.push(low);
                if let Some(end) = high.checked_add(1) {
                    starts.push(end);
                }
            }
            starts.sort_unstable();
            starts.dedup();
            let mut positions = Positions::default();
            for &start in &starts {
                // Positions are pushed in ascending order: `list` is.
                positions.push(
                    list.iter()
                        .filter(|&&(low, high, _)| low <= start && start <= high)
                        .map(|&(_, _, position)| position),
                );
            }
            tables.push(Table {
                field,
                kind: Kind::Ranges { starts, positions },
            });
        }
        Some(DecisionIndex { unindexed, tables })
    }

    /// Whether a raise can merge all lists without falling back.
    pub(crate) fn mergeable(&self) -> bool {
        self.tables.len() < MAX_MERGE
    }

    /// Calls `visit` with each candidate position for a raise, in handler
    /// order. `read` reads a field of the raise's arguments from `ctx`; all
    /// lookups are done before the first visit, which gets `ctx` mutably.
    /// Every candidate's key predicate holds for these arguments.
    ///
    /// No allocation and no large temporary: the common case (the
    /// candidates come from one list, e.g. one port matched) iterates that
    /// list; merging several lists is done out of line.
    #[inline(always)]
    pub(crate) fn for_each_candidate<T: ?Sized>(
        &self,
        ctx: &mut T,
        read: impl Fn(&T, Field) -> Option<u64>,
        mut visit: impl FnMut(&mut T, u32),
    ) {
        let mut found: &[u32] = &self.unindexed;
        for (t, table) in self.tables.iter().enumerate() {
            let hit = table.lookup(&*ctx, &read);
            if hit.is_empty() {
                continue;
            }
            if !found.is_empty() {
                let rest = self.tables.get(t + 1..).unwrap_or(&[]);
                return merge(found, hit, rest, ctx, &read, &mut visit);
            }
            found = hit;
        }
        for &position in found {
            visit(ctx, position);
        }
    }

    /// The candidates as a vector (tests).
    #[cfg(test)]
    fn candidates(&self, read: impl Fn(Field) -> Option<u64>) -> Vec<u32> {
        let mut found = Vec::new();
        self.for_each_candidate(&mut found, |_, f| read(f), |found, p| found.push(p));
        found
    }
}

impl Table {
    /// The positions whose key matches the field's value (empty if the
    /// field cannot be read).
    #[inline(always)]
    fn lookup<T: ?Sized>(&self, ctx: &T, read: &impl Fn(&T, Field) -> Option<u64>) -> &[u32] {
        let Some(value) = read(ctx, self.field) else {
            return &[];
        };
        match &self.kind {
            Kind::Masked {
                mask,
                keys,
                positions,
            } => match keys.binary_search(&(value & mask)) {
                Ok(k) => positions.get(k),
                Err(_) => &[],
            },
            Kind::Ranges { starts, positions } => {
                // starts[0] == 0, so the partition point is at least 1.
                let piece = starts.partition_point(|&s| s <= value) - 1;
                positions.get(piece)
            }
        }
    }
}

/// Several candidate lists: merges them by smallest head (they are sorted),
/// after looking up the remaining tables.
#[inline(never)]
fn merge<'a, T: ?Sized, F: Fn(&T, Field) -> Option<u64>>(
    first: &'a [u32],
    second: &'a [u32],
    rest: &'a [Table],
    ctx: &mut T,
    read: &F,
    visit: &mut impl FnMut(&mut T, u32),
) {
    let mut lists: [&[u32]; MAX_MERGE] = [&[]; MAX_MERGE];
    lists[0] = first;
    lists[1] = second;
    let mut len = 2;
    for table in rest {
        let hit = table.lookup(&*ctx, read);
        // `mergeable()` guarantees room: 1 unindexed + fewer than MAX_MERGE
        // tables.
        if !hit.is_empty() && len < MAX_MERGE {
            lists[len] = hit;
            len += 1;
        }
    }
    let lists = &mut lists[..len];
    loop {
        let mut best: Option<(usize, u32)> = None;
        for (i, list) in lists.iter().enumerate() {
            if let Some(&head) = list.first() {
                if best.is_none_or(|(_, b)| head < b) {
                    best = Some((i, head));
                }
            }
        }
        let Some((i, head)) = best else { return };
        lists[i] = lists[i].get(1..).unwrap_or(&[]);
        visit(ctx, head);
    }
}

fn push_masked(masked: &mut MaskedKeys, key: (Field, u64), value: u64, position: u32) {
    match masked.iter_mut().find(|(k, _)| *k == key) {
        Some((_, list)) => list.push((value, position)),
        None => masked.push((key, vec![(value, position)])),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn naive(entries: &[Vec<Predicate>], read: &dyn Fn(Field) -> Option<u64>) -> Vec<u32> {
        (0..entries.len() as u32)
            .filter(|&p| {
                entries[p as usize]
                    .iter()
                    .all(|pred| read(pred.field).is_some_and(|v| pred.test(v)))
            })
            .collect()
    }

    fn indexed(entries: &[Vec<Predicate>], read: &dyn Fn(Field) -> Option<u64>) -> Vec<u32> {
        match DecisionIndex::build(entries.iter().map(|e| e.as_slice())) {
            None => naive(entries, read),
            Some(index) => {
                assert!(index.mergeable());
                index
                    .candidates(read)
                    .into_iter()
                    .filter(|&p| {
                        entries[p as usize]
                            .iter()
                            .all(|pred| read(pred.field).is_some_and(|v| pred.test(v)))
                    })
                    .collect()
            }
        }
    }

    /// As the dispatcher evaluates: candidates, then every predicate but
    /// the key (which the lookup matched).
    fn indexed_without_key(
        entries: &[Vec<Predicate>],
        read: &dyn Fn(Field) -> Option<u64>,
    ) -> Vec<u32> {
        match DecisionIndex::build(entries.iter().map(|e| e.as_slice())) {
            None => naive(entries, read),
            Some(index) => index
                .candidates(read)
                .into_iter()
                .filter(|&p| {
                    let predicates = &entries[p as usize];
                    let mut rest = predicates.clone();
                    if let Some(key) = key_of(predicates) {
                        let at = rest.iter().position(|q| *q == key).expect("key present");
                        rest.remove(at);
                    }
                    rest.iter()
                        .all(|pred| read(pred.field).is_some_and(|v| pred.test(v)))
                })
                .collect(),
        }
    }

    fn predicate() -> impl Strategy<Value = Predicate> {
        // Small value domains so that matches actually happen.
        let field = prop_oneof![
            Just(Field::Param(0)),
            Just(Field::Param(1)),
            Just(Field::Named(0))
        ];
        let test = prop_oneof![
            (0u64..16).prop_map(Test::Equals),
            (0u64..16, 0u64..8).prop_map(|(low, len)| Test::InRange {
                low,
                high: low + len
            }),
            (
                prop_oneof![Just(0x3u64), Just(0xcu64), Just(0xfu64)],
                0u64..16
            )
                .prop_map(|(mask, value)| Test::Masked { mask, value }),
        ];
        (field, test).prop_map(|(field, test)| Predicate { field, test })
    }

    proptest! {
        #[test]
        fn decision_index_agrees_with_naive_evaluation(
            entries in prop::collection::vec(prop::collection::vec(predicate(), 0..3), 0..40),
            values in prop::collection::vec(0u64..20, 3),
        ) {
            let read = |f: Field| match f {
                Field::Param(i) => values.get(i).copied(),
                Field::Named(i) => values.get(2 + i).copied(),
            };
            prop_assert_eq!(indexed(&entries, &read), naive(&entries, &read));
            prop_assert_eq!(indexed_without_key(&entries, &read), naive(&entries, &read));
        }
    }

    #[test]
    fn five_hundred_ports_one_lookup() {
        let entries: Vec<Vec<Predicate>> = (0..500u64)
            .map(|port| vec![Predicate::equals(Field::Param(0), 1000 + port)])
            .collect();
        let index = DecisionIndex::build(entries.iter().map(|e| e.as_slice())).unwrap();
        let found: Vec<u32> = index.candidates(|_| Some(1250));
        assert_eq!(found, vec![250]);
        assert_eq!(index.candidates(|_| Some(7)).len(), 0);
    }

    #[test]
    fn candidates_merge_in_handler_order() {
        let entries = [
            vec![Predicate::in_range(Field::Param(0), 0, 10)],
            vec![],
            vec![Predicate::equals(Field::Param(0), 5)],
            vec![Predicate::masked(Field::Param(0), 0x1, 1)],
        ];
        let index = DecisionIndex::build(entries.iter().map(|e| e.as_slice())).unwrap();
        let found: Vec<u32> = index.candidates(|_| Some(5));
        assert_eq!(found, vec![0, 1, 2, 3]);
    }
}
