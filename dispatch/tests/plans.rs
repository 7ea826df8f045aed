//! The raise plans chosen at publication (scan, indexed, general) must all
//! give the result of evaluating every guard naively, in handler order.

use std::sync::{Arc, Mutex};

use dispatch::*;
use proptest::prelude::*;

type Args = (u64, u64);

#[derive(Clone, Debug)]
enum GuardSpec {
    Declarative(Predicate),
    /// `args.0 >= threshold`.
    Procedural(u64),
}

impl GuardSpec {
    fn holds(&self, args: &Args) -> bool {
        match self {
            GuardSpec::Declarative(p) => p.test(match p.field {
                Field::Param(0) => args.0,
                Field::Param(_) => args.1,
                Field::Named(_) => args.0 + args.1,
            }),
            GuardSpec::Procedural(t) => args.0 >= *t,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    /// Nothing but guarded by-value handlers: the scan or indexed plan.
    Simple,
    /// A result handler (sum): the general plan.
    Folded,
    /// Accounting on: the general plan.
    Counted,
}

fn predicate() -> impl Strategy<Value = Predicate> {
    let field = prop_oneof![
        Just(Field::Param(0)),
        Just(Field::Param(1)),
        Just(Field::Named(0))
    ];
    let test = prop_oneof![
        (0u64..8).prop_map(Test::Equals),
        (0u64..8, 0u64..4).prop_map(|(low, len)| Test::InRange {
            low,
            high: low + len
        }),
        (prop_oneof![Just(0x3u64), Just(0x6u64)], 0u64..8)
            .prop_map(|(mask, value)| Test::Masked { mask, value }),
    ];
    (field, test).prop_map(|(field, test)| Predicate { field, test })
}

fn guard_spec() -> impl Strategy<Value = GuardSpec> {
    prop_oneof![
        predicate().prop_map(GuardSpec::Declarative),
        (0u64..8).prop_map(GuardSpec::Procedural),
    ]
}

/// `fuse`: install handlers whose first guard is procedural with
/// `Install::guarded` (guard and handler fused into one call).
fn check(handlers: &[Vec<GuardSpec>], variant: Variant, fuse: bool, raises: &[Args]) {
    let (event, authority) = Event::<Args, u64>::builder("Plans").build();
    let sum = event
        .define_field(&authority, "sum", |a: &Args| a.0 + a.1)
        .unwrap();
    assert_eq!(sum, Field::Named(0));
    let ran = Arc::new(Mutex::new(Vec::new()));
    for (i, guards) in handlers.iter().enumerate() {
        let log = ran.clone();
        let code = move |_: &Args| {
            log.lock().unwrap().push(i);
            i as u64 + 1
        };
        let (mut install, rest) = match guards.split_first() {
            Some((GuardSpec::Procedural(t), rest)) if fuse => {
                let t = *t;
                (Install::guarded(move |a: &Args| a.0 >= t, code), rest)
            }
            _ => (Install::new(Handler::new(code)), guards.as_slice()),
        };
        for g in rest {
            install = install.guard(match g {
                GuardSpec::Declarative(p) => Guard::when(*p),
                GuardSpec::Procedural(t) => {
                    let t = *t;
                    Guard::new(move |a: &Args| a.0 >= t)
                }
            });
        }
        event.install(Principal(1), install).unwrap();
    }
    match variant {
        Variant::Simple => {}
        Variant::Folded => event
            .set_result_handler(&authority, Some(Arc::new(|a: u64, b: u64| a + b)))
            .unwrap(),
        Variant::Counted => event.enable_accounting(None),
    }
    let mut cache = RaiseCache::new();
    for args in raises {
        let expected: Vec<usize> = (0..handlers.len())
            .filter(|&i| handlers[i].iter().all(|g| g.holds(args)))
            .collect();
        let expected_result = match (expected.last(), variant) {
            (None, _) => None,
            (Some(_), Variant::Folded) => Some(expected.iter().map(|&i| i as u64 + 1).sum()),
            (Some(&last), _) => Some(last as u64 + 1),
        };
        for cached in [false, true] {
            let result = if cached {
                event.raise_cached(&mut cache, &mut args.clone())
            } else {
                event.raise(&mut args.clone())
            };
            let fired = std::mem::take(&mut *ran.lock().unwrap());
            assert_eq!(
                fired, expected,
                "{variant:?} fuse={fuse} {args:?} cached={cached}"
            );
            assert_eq!(
                result.ok(),
                expected_result,
                "{variant:?} fuse={fuse} {args:?}"
            );
        }
    }
}

proptest! {
    #[test]
    fn every_plan_agrees_with_naive_evaluation(
        handlers in prop::collection::vec(prop::collection::vec(guard_spec(), 0..3), 0..12),
        raises in prop::collection::vec((0u64..8, 0u64..8), 1..6),
    ) {
        for variant in [Variant::Simple, Variant::Folded, Variant::Counted] {
            for fuse in [false, true] {
                check(&handlers, variant, fuse, &raises);
            }
        }
    }
}

#[test]
fn a_published_change_reaches_a_raise_cache() {
    let (event, _) = Event::<Args, u64>::new("Plans.Cache", |a| a.0);
    let mut cache = RaiseCache::new();
    assert_eq!(event.raise_cached(&mut cache, &mut (3, 0)).unwrap(), 3);
    let b = event
        .install(
            Principal(1),
            Install::new(Handler::new(|a: &Args| a.0 * 10))
                .guard(Guard::when(Predicate::equals(Field::Param(0), 3))),
        )
        .unwrap();
    assert_eq!(event.raise_cached(&mut cache, &mut (3, 0)).unwrap(), 30);
    assert_eq!(event.raise_cached(&mut cache, &mut (4, 0)).unwrap(), 4);
    event.remove(Principal(1), b).unwrap();
    assert_eq!(event.raise_cached(&mut cache, &mut (3, 0)).unwrap(), 3);
    // A cache filled by another event is not mistaken for this one's.
    let (other, _) = Event::<Args, u64>::new("Plans.Other", |a| a.1);
    assert_eq!(other.raise_cached(&mut cache, &mut (3, 9)).unwrap(), 9);
    other
        .install(Principal(1), Install::new(Handler::new(|a: &Args| a.1 + 1)))
        .unwrap();
    assert_eq!(other.raise_cached(&mut cache, &mut (3, 9)).unwrap(), 10);
    assert_eq!(event.raise_cached(&mut cache, &mut (3, 0)).unwrap(), 3);
}
