//! Concurrency: raisers never see a half-built handler list.
//!
//! Writers install and remove handlers while raisers raise. Every handler
//! appends its tag to a trace (a `VAR` argument, or for fused handlers,
//! which take their arguments by value, a thread-local), so a raise reports
//! exactly the list it ran. The lists are run both by the general plan and
//! as compiled fused routines (runs and chains). Before each change a writer records the list that change will
//! publish; every trace a raiser sees must be one of the recorded lists
//! (a torn or half-built list would produce a trace never published).

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

use dispatch::*;

#[derive(Clone, Default)]
struct Trace(Vec<u32>);
dispatch::opaque_arg!(Trace);

type Args = (Var<Trace>,);

fn tagger(tag: u32) -> Handler<Args, ()> {
    Handler::by_reference(move |a: &mut Args| a.0 .0 .0.push(tag))
}

/// Raises `event` once (through `raise` when `shared`, else through
/// `cache`) and returns the tags of the handlers that ran, in order.
type RaiseTrace<A, R> = fn(&Event<A, R>, &mut RaiseCache<A, R>, bool) -> Vec<u32>;

#[test]
fn raisers_see_only_published_lists_while_writers_change_them() {
    let (event, _) = Event::<Args, ()>::builder("Stress")
        .intrinsic_by_reference(|a| a.0 .0 .0.push(0))
        .build();
    stress(
        event,
        vec![(0, BindingId::INTRINSIC)],
        |tag| Install::new(tagger(tag)),
        false,
        |event, cache, shared| {
            let mut args: Args = (Var(Trace::default()),);
            if shared {
                event.raise(&mut args).unwrap();
            } else {
                event.raise_cached(cache, &mut args).unwrap();
            }
            args.0 .0 .0
        },
    );
}

thread_local! {
    /// The tags of the fused handlers run by this thread's current raise
    /// (they take their arguments by value, so cannot write a `VAR`).
    static FUSED_TRACE: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A fused installation with one of three codes, chosen by the tag, so that
/// the published lists mix runs (neighbours sharing code) and chains.
fn fused_tagger(tag: u32) -> Install<(u64,), u32> {
    let push = move || FUSED_TRACE.with(|trace| trace.borrow_mut().push(tag));
    match tag % 3 {
        0 => Install::guarded(
            |a: &(u64,)| a.0 == 1,
            move |_: &(u64,)| {
                push();
                tag
            },
        ),
        1 => Install::guarded(
            |a: &(u64,)| a.0 > 0,
            move |_: &(u64,)| {
                push();
                tag
            },
        ),
        _ => Install::guarded(
            |a: &(u64,)| a.0 != 0,
            move |_: &(u64,)| {
                push();
                tag
            },
        ),
    }
}

#[test]
fn raisers_of_fused_lists_see_only_published_lists_while_writers_change_them() {
    let (event, _) = Event::<(u64,), u32>::new("StressFused", |_: &(u64,)| 0);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    stress(
        event,
        Vec::new(),
        fused_tagger,
        true,
        |event, cache, shared| {
            FUSED_TRACE.with(|trace| trace.borrow_mut().clear());
            let result = if shared {
                event.raise(&mut (1,))
            } else {
                event.raise_cached(cache, &mut (1,))
            };
            let trace = FUSED_TRACE.with(|trace| trace.take());
            // Every guard holds: the result is the last handler's, and an
            // empty list is an error, not a result.
            assert_eq!(result.ok(), trace.last().copied());
            trace
        },
    );
}

/// Three raisers raise `event` (alternately through `raise` and
/// `raise_cached`) for 1.5 s while two writers install handlers made by
/// `install` (ordered last) and remove them; every trace a raiser sees must
/// be a list some writer published. `initial` is the list at the start,
/// as (tag, binding); it is never removed. `fused` is what
/// [`Event::is_fused`] must say of every installation.
fn stress<A, R>(
    event: Event<A, R>,
    initial: Vec<(u32, BindingId)>,
    install: fn(u32) -> Install<A, R>,
    fused: bool,
    raise: RaiseTrace<A, R>,
) where
    A: EventArgs + 'static,
    R: EventResult + 'static,
{
    let event = Arc::new(event);
    let kept = initial.len();
    // Lists that have been (or are about to be) published, as tag sequences.
    let valid: Arc<Mutex<HashSet<Vec<u32>>>> = Arc::new(Mutex::new(HashSet::from([initial
        .iter()
        .map(|(tag, _)| *tag)
        .collect()])));
    // The writers' model of the current list (tag, binding), serialized by
    // this lock so that the recorded prediction is the next publication.
    let model: Arc<Mutex<Vec<(u32, BindingId)>>> = Arc::new(Mutex::new(initial));
    let stop = Arc::new(AtomicBool::new(false));
    let raises = Arc::new(AtomicU64::new(0));
    let next_tag = Arc::new(AtomicU64::new(1));

    let mut threads = Vec::new();
    for _ in 0..3 {
        let (event, valid, stop, raises) =
            (event.clone(), valid.clone(), stop.clone(), raises.clone());
        threads.push(thread::spawn(move || {
            let mut cache = RaiseCache::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let trace = raise(&event, &mut cache, n.is_multiple_of(2));
                assert!(
                    valid.lock().unwrap().contains(&trace),
                    "raise saw a list that was never published: {trace:?}"
                );
                n += 1;
            }
            raises.fetch_add(n, Ordering::Relaxed);
        }));
    }
    for w in 0..2u64 {
        let (event, valid, model, stop, next_tag) = (
            event.clone(),
            valid.clone(),
            model.clone(),
            stop.clone(),
            next_tag.clone(),
        );
        threads.push(thread::spawn(move || {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ w;
            let mut changes = 0u64;
            while !stop.load(Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut model = model.lock().unwrap();
                // Keep tags increasing: install Last, remove anywhere but
                // the initial entries.
                if model.len() < kept + 2 || !seed.is_multiple_of(3) {
                    let tag = next_tag.fetch_add(1, Ordering::Relaxed) as u32;
                    let mut next: Vec<u32> = model.iter().map(|(t, _)| *t).collect();
                    next.push(tag);
                    valid.lock().unwrap().insert(next);
                    let b = event
                        .install(Principal(w), install(tag).order(Order::Last))
                        .unwrap();
                    assert_eq!(event.is_fused(b), fused);
                    model.push((tag, b));
                } else {
                    let at = kept + (seed as usize % (model.len() - kept));
                    let mut next: Vec<u32> = model.iter().map(|(t, _)| *t).collect();
                    next.remove(at);
                    valid.lock().unwrap().insert(next);
                    let (_, b) = model.remove(at);
                    event.remove(Principal::KERNEL, b).unwrap();
                }
                let actual = event.bindings();
                let expected: Vec<BindingId> = model.iter().map(|(_, b)| *b).collect();
                assert_eq!(actual, expected);
                changes += 1;
                drop(model);
                thread::yield_now();
            }
            assert!(changes > 10, "writer {w} made only {changes} changes");
        }));
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        raises.load(Ordering::Relaxed) > 1000,
        "raisers made progress"
    );
    assert!(
        valid.lock().unwrap().len() > 20,
        "many lists were published"
    );
}
