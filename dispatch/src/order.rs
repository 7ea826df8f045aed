//! Ordering of handlers (003 §2.3 "Ordering handlers").
//!
//! A handler may be installed with `First` or `Last` ("placed, respectively,
//! at the beginning or the end of the handler list at the time it is
//! installed") and with any number of `Before h` / `After h` constraints
//! relative to other installations. Constraints can be queried and changed
//! later; `Before`/`After` keep holding across every later change, and a
//! change that would break one is refused.
//!
//! Placement is one pass over the list: O(n) per installation, so n
//! installations cost O(n²) in the worst case overall but never regenerate
//! anything already placed (SPIN rebuilt its list and code on every
//! install, 003 §3.1 "Installation overhead").

use core::fmt;

/// Identifies one installation of a handler on one event. The same handler
/// installed twice has two bindings (003 §2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BindingId(pub(crate) u64);

impl BindingId {
    /// The binding of every event's intrinsic handler.
    pub const INTRINSIC: BindingId = BindingId(0);

    /// The raw number (for logs and the shell).
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for BindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "binding#{}", self.0)
    }
}

/// An ordering constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// At the beginning of the list when installed (or reordered). Later
    /// default installations go after it.
    First,
    /// At the end of the list when installed (or reordered). Later default
    /// installations go before the trailing run of `Last` handlers.
    Last,
    /// Runs before the given binding, always.
    Before(BindingId),
    /// Runs after the given binding, always.
    After(BindingId),
}

/// Why constraints cannot be met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderError {
    /// A `Before`/`After` names a binding not installed on this event.
    UnknownBinding(BindingId),
    /// A binding ordered relative to itself.
    SelfReference,
    /// No position satisfies all constraints (the handler's own, imposed
    /// ones, and other handlers' constraints relative to it).
    Unsatisfiable,
}

impl fmt::Display for OrderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrderError::UnknownBinding(b) => write!(f, "ordering names unknown {b}"),
            OrderError::SelfReference => {
                f.write_str("a handler cannot be ordered relative to itself")
            }
            OrderError::Unsatisfiable => f.write_str("ordering constraints cannot be met"),
        }
    }
}

/// Where to insert `subject` with `constraints` into `list` (which does not
/// contain it). `list` gives each installed binding and its constraints.
pub(crate) fn place<'a, I>(
    list: I,
    subject: BindingId,
    constraints: &[Order],
) -> Result<usize, OrderError>
where
    I: ExactSizeIterator<Item = (BindingId, &'a [Order])> + Clone,
{
    let len = list.len();
    let position_of = |target: BindingId| {
        list.clone()
            .position(|(id, _)| id == target)
            .ok_or(OrderError::UnknownBinding(target))
    };
    let (mut low, mut high) = (0usize, len);
    for &constraint in constraints {
        match constraint {
            Order::Before(target) | Order::After(target) if target == subject => {
                return Err(OrderError::SelfReference)
            }
            Order::Before(target) => high = high.min(position_of(target)?),
            Order::After(target) => low = low.max(position_of(target)? + 1),
            Order::First | Order::Last => {}
        }
    }
    // Other handlers' constraints relative to the subject (on reordering).
    let mut tail_start = len;
    let mut in_tail = true;
    for (position, (_, theirs)) in list.clone().enumerate().collect_reverse() {
        if in_tail && theirs.contains(&Order::Last) {
            tail_start = position;
        } else {
            in_tail = false;
        }
        for &constraint in theirs {
            match constraint {
                Order::Before(target) if target == subject => low = low.max(position + 1),
                Order::After(target) if target == subject => high = high.min(position),
                _ => {}
            }
        }
    }
    if low > high {
        return Err(OrderError::Unsatisfiable);
    }
    let position = if constraints.contains(&Order::First) {
        if constraints.contains(&Order::Last) && len > 0 {
            return Err(OrderError::Unsatisfiable);
        }
        0
    } else if constraints.contains(&Order::Last) {
        len
    } else {
        tail_start.clamp(low, high)
    };
    if position < low || position > high {
        return Err(OrderError::Unsatisfiable);
    }
    Ok(position)
}

/// Iterating an ExactSizeIterator back to front without allocating when it
/// is double-ended would need `DoubleEndedIterator`; lists are short, and
/// this keeps `place`'s bound simple.
trait CollectReverse: Iterator + Sized {
    fn collect_reverse(self) -> alloc::vec::IntoIter<Self::Item> {
        let mut items: alloc::vec::Vec<Self::Item> = self.collect();
        items.reverse();
        items.into_iter()
    }
}

impl<I: Iterator> CollectReverse for I {}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    /// A model event: bindings in order with their constraints.
    #[derive(Default)]
    struct Model {
        list: Vec<(BindingId, Vec<Order>)>,
        next: u64,
    }

    impl Model {
        fn view(&self) -> impl ExactSizeIterator<Item = (BindingId, &[Order])> + Clone {
            self.list.iter().map(|(id, c)| (*id, c.as_slice()))
        }

        fn holds(&self) -> bool {
            let pos = |t: BindingId| self.list.iter().position(|(id, _)| *id == t);
            self.list.iter().enumerate().all(|(i, (_, cs))| {
                cs.iter().all(|c| match *c {
                    Order::Before(t) => pos(t).is_none_or(|p| i < p),
                    Order::After(t) => pos(t).is_none_or(|p| i > p),
                    _ => true,
                })
            })
        }

        /// Whether any position works (brute force), for refused requests.
        fn any_position(&self, subject: BindingId, constraints: &[Order]) -> bool {
            (0..=self.list.len()).any(|at| {
                let mut trial: Vec<(BindingId, Vec<Order>)> = self.list.clone();
                trial.insert(at, (subject, constraints.to_vec()));
                let model = Model {
                    list: trial,
                    next: 0,
                };
                let first_ok = !constraints.contains(&Order::First) || at == 0;
                let last_ok = !constraints.contains(&Order::Last) || at == self.list.len();
                first_ok && last_ok && model.holds()
            })
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Install(Vec<(u8, usize)>),
        Reorder(usize, Vec<(u8, usize)>),
        Remove(usize),
    }

    fn constraint(model: &Model, (kind, target): (u8, usize)) -> Order {
        let id = |t: usize| {
            model
                .list
                .get(t % model.list.len().max(1))
                .map_or(BindingId(999), |(id, _)| *id)
        };
        match kind % 4 {
            0 => Order::First,
            1 => Order::Last,
            2 => Order::Before(id(target)),
            _ => Order::After(id(target)),
        }
    }

    fn op() -> impl Strategy<Value = Op> {
        let cs = prop::collection::vec((0u8..4, 0usize..16), 0..3);
        prop_oneof![
            3 => cs.clone().prop_map(Op::Install),
            1 => (0usize..16, cs).prop_map(|(t, c)| Op::Reorder(t, c)),
            1 => (0usize..16).prop_map(Op::Remove),
        ]
    }

    proptest! {
        #[test]
        fn ordering_constraints_always_hold(ops in prop::collection::vec(op(), 1..40)) {
            let mut model = Model::default();
            for op in ops {
                match op {
                    Op::Install(raw) => {
                        let subject = BindingId(model.next + 1);
                        model.next += 1;
                        let cs: Vec<Order> = raw.into_iter().map(|c| constraint(&model, c)).collect();
                        let known = cs.iter().all(|c| match c {
                            Order::Before(t) | Order::After(t) => model.list.iter().any(|(id, _)| id == t),
                            _ => true,
                        });
                        match place(model.view(), subject, &cs) {
                            Ok(at) => {
                                model.list.insert(at, (subject, cs.clone()));
                                prop_assert!(model.holds());
                                if cs.contains(&Order::First) { prop_assert_eq!(at, 0); }
                                if cs.contains(&Order::Last) { prop_assert_eq!(at, model.list.len() - 1); }
                            }
                            Err(OrderError::UnknownBinding(_)) => prop_assert!(!known),
                            Err(OrderError::SelfReference) => prop_assert!(false, "fresh id"),
                            Err(OrderError::Unsatisfiable) => {
                                prop_assert!(known);
                                prop_assert!(!model.any_position(subject, &cs));
                            }
                        }
                    }
                    Op::Reorder(t, raw) if !model.list.is_empty() => {
                        let at = t % model.list.len();
                        let (subject, old) = model.list.remove(at);
                        let cs: Vec<Order> = raw.into_iter().map(|c| constraint(&model, c)).collect();
                        match place(model.view(), subject, &cs) {
                            Ok(to) => model.list.insert(to, (subject, cs)),
                            Err(OrderError::Unsatisfiable) => {
                                prop_assert!(!model.any_position(subject, &cs));
                                model.list.insert(at, (subject, old));
                            }
                            Err(_) => model.list.insert(at, (subject, old)),
                        }
                        prop_assert!(model.holds());
                    }
                    Op::Remove(t) if !model.list.is_empty() => {
                        let at = t % model.list.len();
                        model.list.remove(at);
                        prop_assert!(model.holds());
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn before_and_after_conflict_is_refused() {
        let a = BindingId(1);
        let b = BindingId(2);
        let list = [(a, &[][..]), (b, &[][..])];
        // After b and before a: b is after a, so impossible.
        assert_eq!(
            place(
                list.iter().copied(),
                BindingId(3),
                &[Order::After(b), Order::Before(a)]
            ),
            Err(OrderError::Unsatisfiable)
        );
        assert_eq!(
            place(
                list.iter().copied(),
                BindingId(3),
                &[Order::After(a), Order::Before(b)]
            ),
            Ok(1)
        );
        assert_eq!(
            place(
                list.iter().copied(),
                BindingId(3),
                &[Order::Before(BindingId(9))]
            ),
            Err(OrderError::UnknownBinding(BindingId(9)))
        );
    }

    #[test]
    fn default_goes_before_trailing_last_handlers() {
        let last = [Order::Last];
        let list = [(BindingId(1), &[][..]), (BindingId(2), &last[..])];
        assert_eq!(place(list.iter().copied(), BindingId(3), &[]), Ok(1));
        assert_eq!(
            place(list.iter().copied(), BindingId(3), &[Order::First]),
            Ok(0)
        );
        assert_eq!(
            place(list.iter().copied(), BindingId(3), &[Order::Last]),
            Ok(2)
        );
    }
}
