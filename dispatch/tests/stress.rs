//! Concurrency: raisers never see a half-built handler list.
//!
//! Writers install and remove handlers while raisers raise. Every handler
//! appends its tag to a `VAR` trace, so a raise reports exactly the list it
//! ran. Before each change a writer records the list that change will
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

#[test]
fn raisers_see_only_published_lists_while_writers_change_them() {
    let (event, _) = Event::<Args, ()>::builder("Stress")
        .intrinsic_by_reference(|a| a.0 .0 .0.push(0))
        .build();
    let event = Arc::new(event);
    // Lists that have been (or are about to be) published, as tag sequences.
    let valid: Arc<Mutex<HashSet<Vec<u32>>>> = Arc::new(Mutex::new(HashSet::from([vec![0]])));
    // The writers' model of the current list (tag, binding), serialized by
    // this lock so that the recorded prediction is the next publication.
    let model: Arc<Mutex<Vec<(u32, BindingId)>>> =
        Arc::new(Mutex::new(vec![(0, BindingId::INTRINSIC)]));
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
                let mut args: Args = (Var(Trace::default()),);
                if n.is_multiple_of(2) {
                    event.raise(&mut args).unwrap();
                } else {
                    event.raise_cached(&mut cache, &mut args).unwrap();
                }
                let trace = args.0 .0 .0;
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
                // Keep tags increasing: install Last, remove anywhere (never
                // the intrinsic), and a few First installs with tag 0-free
                // ordering checked by membership alone.
                if model.len() < 2 || !seed.is_multiple_of(3) {
                    let tag = next_tag.fetch_add(1, Ordering::Relaxed) as u32;
                    let mut next: Vec<u32> = model.iter().map(|(t, _)| *t).collect();
                    next.push(tag);
                    valid.lock().unwrap().insert(next);
                    let b = event
                        .install(Principal(w), Install::new(tagger(tag)).order(Order::Last))
                        .unwrap();
                    model.push((tag, b));
                } else {
                    let at = 1 + (seed as usize % (model.len() - 1));
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
