//! `Install::guarded`: a guard and a handler fused into one call at
//! installation. The guard stays a guard in every respect (counted, listed,
//! removable, authorized, combined with imposed guards, ordered); only the
//! number of calls per raise changes.

use std::sync::{Arc, Mutex};

use dispatch::*;
use proptest::prelude::*;

const EXTENSION: Principal = Principal(7);
const OTHER: Principal = Principal(8);

type Args = (u64,);

/// A shared log of which handler ran.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<&'static str>>>);

impl Log {
    fn code(&self, tag: &'static str, result: u64) -> impl Fn(&Args) -> u64 + Send + Sync {
        let log = self.clone();
        move |_: &Args| {
            log.0.lock().unwrap().push(tag);
            result
        }
    }

    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// An event without its intrinsic handler.
fn bare() -> (Event<Args, u64>, Authority) {
    let (event, authority) = Event::new("Fused", |a: &Args| a.0);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    (event, authority)
}

/// Installs, as `EXTENSION`, the fused handler "h" (result 1) guarded by
/// `arg > 10`: the installation most tests here start from.
fn install_h(event: &Event<Args, u64>, log: &Log) -> BindingId {
    event
        .install(
            EXTENSION,
            Install::guarded(|a: &Args| a.0 > 10, log.code("h", 1)),
        )
        .unwrap()
}

/// Raises through `raise` and through a fresh `raise_cached`; both must
/// agree. Returns the result and the handlers that ran (once).
fn raise(event: &Event<Args, u64>, log: &Log, arg: u64) -> (Option<u64>, Vec<&'static str>) {
    let shared = event.raise(&mut (arg,)).ok();
    let ran = log.take();
    let mut cache = RaiseCache::new();
    let cached = event.raise_cached(&mut cache, &mut (arg,)).ok();
    assert_eq!(log.take(), ran, "raise_cached ran the same handlers");
    assert_eq!(cached, shared, "raise_cached gave the same result");
    (shared, ran)
}

#[test]
fn a_false_guard_keeps_the_handler_from_running() {
    let (event, _) = bare();
    let log = Log::default();
    let b = install_h(&event, &log);
    assert!(event.is_fused(b));
    assert_eq!(raise(&event, &log, 11), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 10), (None, vec![]));
    assert_eq!(
        event.raise(&mut (3,)),
        Err(RaiseFailure::NoHandler { event: "Fused" }.into())
    );
    // The default handler runs when the fused guard fails.
    let (event, authority) = bare();
    install_h(&event, &log);
    event
        .set_default(&authority, Some(Handler::new(|_: &Args| 99)))
        .unwrap();
    assert_eq!(raise(&event, &log, 3), (Some(99), vec![]));
    assert_eq!(raise(&event, &log, 30), (Some(1), vec!["h"]));
}

#[test]
fn the_fused_guard_is_counted_and_listed() {
    let (event, _) = bare();
    let log = Log::default();
    let b = install_h(&event, &log);
    assert_eq!(event.guards_of(b), Some((1, 0)));
    assert_eq!(event.stats().guards, 1);
    assert_eq!(event.stats().handlers, 1);
    let (own, imposed) = event.guard_ids_of(b).unwrap();
    assert_eq!(own.len(), 1);
    assert!(imposed.is_empty());
    // More guards given at installation are stacked after it (unfused).
    let c = event
        .install(
            EXTENSION,
            Install::guarded(|a: &Args| a.0 > 10, log.code("c", 2))
                .guard(Guard::new(|a: &Args| a.0.is_multiple_of(2))),
        )
        .unwrap();
    assert_eq!(event.guards_of(c), Some((2, 0)));
    assert_eq!(event.stats().guards, 3);
    assert!(!event.is_fused(c));
    assert_eq!(raise(&event, &log, 11), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 12), (Some(2), vec!["h", "c"]));
}

#[test]
fn removing_the_fused_guard_falls_back_to_the_plain_handler() {
    let (event, _) = bare();
    let log = Log::default();
    let b = install_h(&event, &log);
    let (own, _) = event.guard_ids_of(b).unwrap();
    // Only the installer may remove it (no authorizer: the installer rule).
    assert_eq!(
        event.remove_guard(OTHER, b, own[0]),
        Err(Error::NotInstaller)
    );
    assert!(event.is_fused(b));
    event.remove_guard(EXTENSION, b, own[0]).unwrap();
    assert!(!event.is_fused(b));
    assert_eq!(event.guards_of(b), Some((0, 0)));
    assert_eq!(event.stats().guards, 0);
    assert_eq!(raise(&event, &log, 3), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 30), (Some(1), vec!["h"]));
    assert_eq!(
        event.remove_guard(EXTENSION, b, own[0]),
        Err(Error::UnknownGuard(own[0]))
    );
    // A guard added later applies (separately: it is not the fused one).
    let g = event
        .add_guard(EXTENSION, b, Guard::new(|a: &Args| a.0 < 5))
        .unwrap();
    assert!(!event.is_fused(b));
    assert_eq!(raise(&event, &log, 3), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 30), (None, vec![]));
    event.remove_guard(EXTENSION, b, g).unwrap();
    assert_eq!(raise(&event, &log, 30), (Some(1), vec!["h"]));
}

#[test]
fn an_added_guard_unfuses_until_it_is_removed() {
    let (event, _) = bare();
    let log = Log::default();
    let b = install_h(&event, &log);
    let g = event
        .add_guard(EXTENSION, b, Guard::new(|a: &Args| a.0 < 20))
        .unwrap();
    assert!(!event.is_fused(b));
    assert_eq!(event.guards_of(b), Some((2, 0)));
    assert_eq!(raise(&event, &log, 15), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 25), (None, vec![]));
    assert_eq!(raise(&event, &log, 5), (None, vec![]));
    event.remove_guard(EXTENSION, b, g).unwrap();
    assert!(event.is_fused(b), "back to one call");
    assert_eq!(raise(&event, &log, 25), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 5), (None, vec![]));
}

#[test]
fn imposed_guards_apply_to_fused_installations() {
    let (event, authority) = bare();
    let log = Log::default();
    // The authorizer sees the installation and imposes a guard.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = seen.clone();
    event
        .set_authorizer(
            &authority,
            Some(Arc::new(
                move |request: &Request<'_>, grant: &mut Grant<Args>| {
                    requests
                        .lock()
                        .unwrap()
                        .push((request.operation, request.handler_name));
                    if request.operation == Operation::RemoveGuard {
                        return Err(Denied::new("guards stay"));
                    }
                    if request.operation == Operation::Install {
                        grant.impose_guard(Guard::new(|a: &Args| a.0.is_multiple_of(2)));
                    }
                    Ok(())
                },
            )),
        )
        .unwrap();
    let b = install_h(&event, &log);
    assert_eq!(*seen.lock().unwrap(), vec![(Operation::Install, "handler")]);
    assert_eq!(event.guards_of(b), Some((1, 1)));
    assert_eq!(event.stats().guards, 2);
    assert!(!event.is_fused(b), "imposed guard: not fused");
    assert_eq!(raise(&event, &log, 12), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 13), (None, vec![]), "imposed guard");
    assert_eq!(raise(&event, &log, 4), (None, vec![]), "fused guard");
    // Removing the fused guard goes through the authorizer, which refuses.
    let (own, imposed) = event.guard_ids_of(b).unwrap();
    assert_eq!(
        event.remove_guard(EXTENSION, b, own[0]),
        Err(Error::Denied(Denied::new("guards stay")))
    );
    assert_eq!(raise(&event, &log, 4), (None, vec![]));
    // Once the authority removes the imposed guard, the entry is fused again.
    event
        .remove_imposed_guard(&authority, b, imposed[0])
        .unwrap();
    assert!(event.is_fused(b));
    assert_eq!(raise(&event, &log, 13), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 4), (None, vec![]));
    // An imposed guard added later by the authority applies too.
    let g = event
        .impose_guard(&authority, b, Guard::new(|a: &Args| a.0 < 100))
        .unwrap();
    assert!(!event.is_fused(b));
    assert_eq!(raise(&event, &log, 200), (None, vec![]));
    assert_eq!(raise(&event, &log, 50), (Some(1), vec!["h"]));
    event.remove_imposed_guard(&authority, b, g).unwrap();
    assert_eq!(raise(&event, &log, 200), (Some(1), vec!["h"]));
}

#[test]
fn fused_and_unfused_installations_keep_their_order() {
    let (event, _) = Event::new("Fused.Order", |a: &Args| a.0);
    let log = Log::default();
    let all = |_: &Args| true;
    let z = event
        .install(
            EXTENSION,
            Install::guarded(all, log.code("z", 26)).order(Order::Last),
        )
        .unwrap();
    let a = event
        .install(
            EXTENSION,
            Install::new(Handler::new(log.code("a", 1))).guard(Guard::new(all)),
        )
        .unwrap();
    event
        .install(
            EXTENSION,
            Install::guarded(all, log.code("f", 6)).order(Order::First),
        )
        .unwrap();
    event
        .install(
            EXTENSION,
            Install::guarded(all, log.code("c", 3)).order(Order::Before(a)),
        )
        .unwrap();
    let d = event
        .install(
            EXTENSION,
            Install::new(Handler::new(log.code("d", 4))).order(Order::Before(z)),
        )
        .unwrap();
    // The intrinsic handler (unfused) is in the list too.
    event.raise(&mut (7,)).unwrap();
    let order = log.take();
    assert_eq!(order, vec!["f", "c", "a", "d", "z"]);
    assert_eq!(raise(&event, &log, 7), (Some(26), order.clone()));
    assert_eq!(event.bindings().len(), 6);
    // Mixed list: the fused installations run unfused, same order.
    assert!(!event.is_fused(z));
    // Only fused installations left: same order, fused.
    event.remove(EXTENSION, a).unwrap();
    event.remove(EXTENSION, d).unwrap();
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    assert!(event.is_fused(z));
    assert_eq!(raise(&event, &log, 7), (Some(26), vec!["f", "c", "z"]));
    event.reorder(EXTENSION, z, &[Order::First]).unwrap();
    assert_eq!(raise(&event, &log, 7), (Some(3), vec!["z", "f", "c"]));
}

#[test]
fn fused_installations_on_the_general_plan() {
    // A result handler, accounting and a decision index all take the list
    // off the fused plan; the guard must still hold everywhere.
    let (event, authority) = bare();
    let log = Log::default();
    let b = install_h(&event, &log);
    event
        .install(
            EXTENSION,
            Install::guarded(|a: &Args| a.0 > 20, log.code("i", 2)),
        )
        .unwrap();
    assert!(event.is_fused(b));
    event
        .set_result_handler(&authority, Some(Arc::new(|x: u64, y: u64| x + y)))
        .unwrap();
    assert!(!event.is_fused(b));
    assert_eq!(raise(&event, &log, 15), (Some(1), vec!["h"]));
    assert_eq!(raise(&event, &log, 25), (Some(3), vec!["h", "i"]));
    event.set_result_handler(&authority, None).unwrap();
    event.enable_accounting(None);
    assert_eq!(raise(&event, &log, 5), (None, vec![]));
    assert_eq!(raise(&event, &log, 25), (Some(2), vec!["h", "i"]));
    event.disable_accounting();
    assert!(event.is_fused(b));
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(log.code("p", 3)))
                .guard(Guard::when(Predicate::equals(Field::Param(0), 15))),
        )
        .unwrap();
    assert!(!event.is_fused(b));
    assert_eq!(raise(&event, &log, 15), (Some(3), vec!["h", "p"]));
    assert_eq!(raise(&event, &log, 25), (Some(2), vec!["h", "i"]));
    assert_eq!(raise(&event, &log, 5), (None, vec![]));
}

#[test]
fn a_raise_cache_follows_fusion_changes() {
    let (event, _) = bare();
    let log = Log::default();
    let mut cache = RaiseCache::new();
    let b = install_h(&event, &log);
    assert_eq!(event.raise_cached(&mut cache, &mut (11,)).ok(), Some(1));
    assert!(event.raise_cached(&mut cache, &mut (1,)).is_err());
    let (own, _) = event.guard_ids_of(b).unwrap();
    event.remove_guard(EXTENSION, b, own[0]).unwrap();
    assert_eq!(event.raise_cached(&mut cache, &mut (1,)).ok(), Some(1));
    event
        .install(EXTENSION, Install::new(Handler::new(|a: &Args| a.0 * 2)))
        .unwrap();
    assert_eq!(event.raise_cached(&mut cache, &mut (4,)).ok(), Some(8));
    event.remove(EXTENSION, b).unwrap();
    assert_eq!(event.raise_cached(&mut cache, &mut (5,)).ok(), Some(10));
    assert_eq!(log.take(), vec!["h", "h", "h"]);
}

#[test]
fn one_raise_cache_shared_by_two_events_runs_each_ones_handlers() {
    // Both events go through the same changes, so they are at the same
    // point of their histories; a cache keyed by that point alone would
    // run one event's handler for the other.
    let (first, _) = bare();
    let (second, _) = bare();
    let log = Log::default();
    for (event, tag, result) in [(&first, "first", 1), (&second, "second", 2)] {
        event
            .install(
                EXTENSION,
                Install::guarded(|_: &Args| true, log.code(tag, result)),
            )
            .unwrap();
    }
    assert_eq!(first.generation(), second.generation());
    let mut cache = RaiseCache::new();
    for _ in 0..3 {
        assert_eq!(first.raise_cached(&mut cache, &mut (0,)).ok(), Some(1));
        assert_eq!(second.raise_cached(&mut cache, &mut (0,)).ok(), Some(2));
    }
    assert_eq!(log.take(), ["first", "second"].repeat(3));
}

#[test]
fn installations_sharing_their_code_run_in_order_each_with_its_own_state() {
    let (event, _) = bare();
    let log = Log::default();
    // `at_least` and `log.code` give one concrete type for every call, so
    // consecutive installations of them share their code (one run); `q`
    // has code of its own and splits the list.
    let at_least = |t: u64| move |a: &Args| a.0 >= t;
    let q_log = log.clone();
    let q = move |_: &Args| {
        q_log.0.lock().unwrap().push("q");
        3
    };
    let install = |install: Install<Args, u64>| event.install(EXTENSION, install).unwrap();
    let p1 = install(Install::guarded(at_least(0), log.code("p1", 1)));
    let p2 = install(Install::guarded(at_least(5), log.code("p2", 2)));
    let q = install(Install::guarded(|a: &Args| a.0.is_multiple_of(2), q));
    let p3 = install(Install::guarded(at_least(0), log.code("p3", 4)));
    let p4 = install(Install::guarded(at_least(10), log.code("p4", 5)));
    assert!([p1, p2, q, p3, p4].iter().all(|b| event.is_fused(*b)));
    assert_eq!(raise(&event, &log, 3), (Some(4), vec!["p1", "p3"]));
    assert_eq!(
        raise(&event, &log, 6),
        (Some(4), vec!["p1", "p2", "q", "p3"])
    );
    assert_eq!(
        raise(&event, &log, 12),
        (Some(5), vec!["p1", "p2", "q", "p3", "p4"])
    );
    // Removing a member, then the code that split the list: p1, p2 and p4
    // become one run.
    event.remove(EXTENSION, p3).unwrap();
    assert_eq!(
        raise(&event, &log, 12),
        (Some(5), vec!["p1", "p2", "q", "p4"])
    );
    event.remove(EXTENSION, q).unwrap();
    assert_eq!(raise(&event, &log, 7), (Some(2), vec!["p1", "p2"]));
    assert_eq!(raise(&event, &log, 10), (Some(5), vec!["p1", "p2", "p4"]));
    // Reordering moves a member out of the run's order, not its state.
    event.reorder(EXTENSION, p4, &[Order::First]).unwrap();
    assert_eq!(raise(&event, &log, 10), (Some(2), vec!["p4", "p1", "p2"]));
}

#[test]
fn long_lists_of_alternating_code_run_every_handler_in_order() {
    // Two codes alternating: no two neighbours share code, so 40
    // installations are 40 parts, threaded into several chains.
    let (event, _) = bare();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let record = |i: u64| {
        let ran = ran.clone();
        move |_: &Args| {
            ran.lock().unwrap().push(i);
            i + 1
        }
    };
    for i in 0..40u64 {
        let install = if i % 2 == 0 {
            Install::guarded(move |a: &Args| i % 7 <= a.0, record(i))
        } else {
            Install::guarded(move |a: &Args| a.0 >= i % 7, record(i))
        };
        let binding = event.install(EXTENSION, install).unwrap();
        assert!(event.is_fused(binding));
    }
    for arg in [0, 3, 6] {
        let want: Vec<u64> = (0..40).filter(|i| i % 7 <= arg).collect();
        let shared = event.raise(&mut (arg,)).ok();
        assert_eq!(std::mem::take(&mut *ran.lock().unwrap()), want);
        let mut cache = RaiseCache::new();
        let cached = event.raise_cached(&mut cache, &mut (arg,)).ok();
        assert_eq!(std::mem::take(&mut *ran.lock().unwrap()), want);
        assert_eq!(shared, want.last().map(|i| i + 1));
        assert_eq!(cached, shared);
    }
}

// --- Equivalence with the unfused path ---------------------------------------

/// One installation: the guard `arg >= threshold`, maybe more guards
/// `arg % modulus != 0`, fused or not; fused ones with one of two
/// concrete guard types (`other_code`), so that lists mix runs of the same
/// code with changes of code.
#[derive(Clone, Debug)]
struct Spec {
    threshold: u64,
    extra: Option<u64>,
    fused: bool,
    other_code: bool,
}

#[derive(Clone, Debug)]
enum Step {
    Raise(u64),
    /// Removes the first own guard of installation `i % n`.
    RemoveFirstGuard(usize),
    /// Adds `arg % m != 0` to installation `i % n`.
    AddGuard(usize, u64),
    /// Imposes `arg != v` on installation `i % n`.
    Impose(usize, u64),
    /// Removes installation `i % n`.
    Remove(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u64..16).prop_map(Step::Raise),
        1 => any::<usize>().prop_map(Step::RemoveFirstGuard),
        1 => (any::<usize>(), 2u64..5).prop_map(|(i, m)| Step::AddGuard(i, m)),
        1 => (any::<usize>(), 0u64..16).prop_map(|(i, v)| Step::Impose(i, v)),
        1 => any::<usize>().prop_map(Step::Remove),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u64..16,
        prop::option::of(2u64..5),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(threshold, extra, fused, other_code)| Spec {
            threshold,
            extra,
            fused,
            other_code,
        })
}

/// Builds an event from `specs`, either as given or with every
/// installation unfused.
fn build(
    specs: &[Spec],
    fuse: bool,
    ran: &Arc<Mutex<Vec<usize>>>,
) -> (Event<Args, u64>, Authority, Vec<BindingId>) {
    let (event, authority) = bare();
    let bindings = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let log = ran.clone();
            let code = move |_: &Args| {
                log.lock().unwrap().push(i);
                i as u64 + 1
            };
            let threshold = spec.threshold;
            let guard = move |a: &Args| a.0 >= threshold;
            let mut install = if spec.fused && fuse && spec.other_code {
                Install::guarded(move |a: &Args| guard(a), code)
            } else if spec.fused && fuse {
                Install::guarded(guard, code)
            } else {
                Install::new(Handler::new(code)).guard(Guard::new(guard))
            };
            if let Some(m) = spec.extra {
                install = install.guard(Guard::new(move |a: &Args| !a.0.is_multiple_of(m)));
            }
            event.install(EXTENSION, install).unwrap()
        })
        .collect();
    (event, authority, bindings)
}

/// What `raise` and `raise_cached` gave: result and handlers run, each.
type Raised = (Option<u64>, Vec<usize>, Option<u64>, Vec<usize>);

/// Applies one step; returns what a raise gave.
fn apply(
    event: &Event<Args, u64>,
    authority: &Authority,
    bindings: &mut Vec<BindingId>,
    cache: &mut RaiseCache<Args, u64>,
    ran: &Arc<Mutex<Vec<usize>>>,
    step: &Step,
) -> Option<Raised> {
    let pick = |i: usize| (!bindings.is_empty()).then(|| bindings[i % bindings.len()]);
    match *step {
        Step::Raise(arg) => {
            let shared = event.raise(&mut (arg,)).ok();
            let shared_ran = std::mem::take(&mut *ran.lock().unwrap());
            let cached = event.raise_cached(cache, &mut (arg,)).ok();
            let cached_ran = std::mem::take(&mut *ran.lock().unwrap());
            return Some((shared, shared_ran, cached, cached_ran));
        }
        Step::RemoveFirstGuard(i) => {
            if let Some(b) = pick(i) {
                if let Some(&g) = event.guard_ids_of(b).unwrap().0.first() {
                    event.remove_guard(EXTENSION, b, g).unwrap();
                }
            }
        }
        Step::AddGuard(i, m) => {
            if let Some(b) = pick(i) {
                event
                    .add_guard(
                        EXTENSION,
                        b,
                        Guard::new(move |a: &Args| !a.0.is_multiple_of(m)),
                    )
                    .unwrap();
            }
        }
        Step::Impose(i, v) => {
            if let Some(b) = pick(i) {
                event
                    .impose_guard(authority, b, Guard::new(move |a: &Args| a.0 != v))
                    .unwrap();
            }
        }
        Step::Remove(i) => {
            if let Some(b) = pick(i) {
                event.remove(EXTENSION, b).unwrap();
                bindings.retain(|x| *x != b);
            }
        }
    }
    None
}

proptest! {
    #[test]
    fn fused_installations_behave_as_unfused_ones(
        specs in prop::collection::vec(spec(), 0..8),
        steps in prop::collection::vec(step(), 1..24),
    ) {
        let ran_fused = Arc::new(Mutex::new(Vec::new()));
        let ran_plain = Arc::new(Mutex::new(Vec::new()));
        let (fused, fused_authority, mut fused_bindings) = build(&specs, true, &ran_fused);
        let (plain, plain_authority, mut plain_bindings) = build(&specs, false, &ran_plain);
        let (mut fused_cache, mut plain_cache) = (RaiseCache::new(), RaiseCache::new());
        for step in &steps {
            let got = apply(&fused, &fused_authority, &mut fused_bindings, &mut fused_cache, &ran_fused, step);
            let want = apply(&plain, &plain_authority, &mut plain_bindings, &mut plain_cache, &ran_plain, step);
            prop_assert_eq!(&got, &want, "{:?}", step);
            if let Some((shared, shared_ran, cached, cached_ran)) = got {
                prop_assert_eq!(shared, cached);
                prop_assert_eq!(shared_ran, cached_ran);
            }
            prop_assert_eq!(fused.stats().guards, plain.stats().guards);
            for (f, p) in fused_bindings.iter().zip(&plain_bindings) {
                prop_assert_eq!(fused.guards_of(*f), plain.guards_of(*p));
            }
        }
    }
}
