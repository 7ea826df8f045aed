//! Host tests of the dispatcher rules (003 §2), one or more per rule,
//! including every failure path.

use std::{
    any::{Any, TypeId},
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    thread,
    time::Duration,
};

use dispatch::*;

const EXTENSION: Principal = Principal(7);
const OTHER: Principal = Principal(8);

fn double(args: &(u64,)) -> u64 {
    args.0 * 2
}

/// A shared log of which handler ran.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<&'static str>>>);

impl Log {
    fn handler(&self, tag: &'static str) -> Handler<(u64,), u64> {
        let log = self.clone();
        Handler::new(move |_: &(u64,)| {
            log.0.lock().unwrap().push(tag);
            0
        })
    }
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct ThreadSpawner;

impl Spawner for ThreadSpawner {
    fn spawn(&self, task: Box<dyn FnOnce() + Send>) -> Result<(), SpawnError> {
        thread::spawn(task);
        Ok(())
    }
}

// --- Intrinsic handler and the plain-call shortcut ----------------------

/// An event with a default handler and nothing installed says so (its
/// raisers may run the default themselves); a handler installed, or
/// accounting on, and it no longer does; removed, it does again.
#[test]
fn an_event_with_only_a_default_is_unhandled_until_a_handler_is_installed() {
    let (event, authority) = Event::<(u64,), u64>::builder("Port.Arrived").build();
    event
        .set_default(&authority, Some(Handler::new(|a: &(u64,)| a.0 + 100)))
        .unwrap();
    assert!(event.is_unhandled());
    assert!(!event.is_intrinsic_only());
    assert_eq!(event.raise(&mut (1,)), Ok(101));
    let binding = event
        .install(EXTENSION, Install::new(Handler::new(|a: &(u64,)| a.0)))
        .unwrap();
    assert!(!event.is_unhandled(), "a handler could take the raise");
    assert_eq!(event.raise(&mut (1,)), Ok(1));
    event.remove(EXTENSION, binding).unwrap();
    assert!(event.is_unhandled());
    event.enable_accounting(None);
    assert!(!event.is_unhandled(), "accounting counts every raise");
    event.disable_accounting();
    assert!(event.is_unhandled());
    let (with_intrinsic, _) = Event::new("Math.Double", double);
    assert!(!with_intrinsic.is_unhandled(), "an intrinsic is a handler");
}

#[test]
fn intrinsic_only_raise_is_a_plain_call() {
    let (event, authority) = Event::new("Math.Double", double);
    assert!(event.is_intrinsic_only());
    assert_eq!(event.raise(&mut (21,)), Ok(42));
    assert_eq!(event.bindings(), vec![BindingId::INTRINSIC]);

    let b = event
        .install(EXTENSION, Install::new(Handler::new(|a: &(u64,)| a.0 + 1)))
        .unwrap();
    assert!(
        !event.is_intrinsic_only(),
        "a second handler needs the dispatcher"
    );
    assert_eq!(
        event.raise(&mut (21,)),
        Ok(22),
        "last handler's result by default"
    );

    event.remove(EXTENSION, b).unwrap();
    assert!(event.is_intrinsic_only(), "back to a plain call");
    // A guard on the intrinsic itself also needs the dispatcher.
    event
        .impose_guard(
            &authority,
            BindingId::INTRINSIC,
            Guard::new(|a: &(u64,)| a.0 > 10),
        )
        .unwrap();
    assert!(!event.is_intrinsic_only());
    assert_eq!(event.raise(&mut (21,)), Ok(42));
    assert_eq!(
        event.raise(&mut (3,)),
        Err(RaiseFailure::NoHandler {
            event: "Math.Double"
        }
        .into())
    );
}

#[test]
fn intrinsic_can_be_replaced_and_restored() {
    let (event, authority) = Event::new("Math.Double", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    assert_eq!(
        event.raise(&mut (1,)),
        Err(RaiseFailure::NoHandler {
            event: "Math.Double"
        }
        .into())
    );
    event
        .install(EXTENSION, Install::new(Handler::new(|a: &(u64,)| a.0 * 3)))
        .unwrap();
    assert_eq!(event.raise(&mut (2,)), Ok(6));
    event.restore_intrinsic(&authority).unwrap();
    assert_eq!(event.bindings()[0], BindingId::INTRINSIC);
    // Without an authorizer, an extension cannot remove what it did not install.
    assert_eq!(
        event.remove(EXTENSION, BindingId::INTRINSIC),
        Err(Error::NotInstaller)
    );
}

// --- Handlers, closures, guards -----------------------------------------

#[test]
fn same_handler_installed_many_times_runs_once_per_installation() {
    let (event, _) = Event::new("E", double);
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let handler = Handler::new(move |_: &(u64,)| {
        c.fetch_add(1, Ordering::Relaxed);
        0
    });
    let bindings: Vec<_> = (0..5)
        .map(|_| {
            event
                .install(EXTENSION, Install::new(handler.clone()))
                .unwrap()
        })
        .collect();
    event.raise(&mut (1,)).unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 5);
    event.remove(EXTENSION, bindings[2]).unwrap();
    event.raise(&mut (1,)).unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 9);
    assert_eq!(event.stats().handlers, 5, "intrinsic + 4");
}

#[test]
fn closures_distinguish_installations_of_one_procedure() {
    fn add(closure: &u64, args: &(u64,)) -> u64 {
        closure + args.0
    }
    let (event, authority) = Event::new("E", double);
    event
        .set_result_handler(&authority, Some(Arc::new(|a: u64, b: u64| a.max(b))))
        .unwrap();
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    event
        .install(EXTENSION, Install::new(Handler::with_closure(100u64, add)))
        .unwrap();
    event
        .install(EXTENSION, Install::new(Handler::with_closure(5u64, add)))
        .unwrap();
    assert_eq!(event.raise(&mut (1,)), Ok(101));
}

#[test]
fn stacked_guards_must_all_hold() {
    let (event, _) = Event::new("E", double);
    let log = Log::default();
    let b = event
        .install(
            EXTENSION,
            Install::new(log.handler("h"))
                .guard(Guard::new(|a: &(u64,)| a.0 > 10))
                .guard(Guard::new(|a: &(u64,)| a.0.is_multiple_of(2))),
        )
        .unwrap();
    event.raise(&mut (12,)).unwrap();
    event.raise(&mut (13,)).unwrap();
    event.raise(&mut (4,)).unwrap();
    assert_eq!(log.take(), vec!["h"]);
    // Stack a third one later, then remove it again.
    let g = event
        .add_guard(EXTENSION, b, Guard::new(|a: &(u64,)| a.0 > 100))
        .unwrap();
    event.raise(&mut (12,)).unwrap();
    assert_eq!(log.take(), Vec::<&str>::new());
    event.remove_guard(EXTENSION, b, g).unwrap();
    event.raise(&mut (12,)).unwrap();
    assert_eq!(log.take(), vec!["h"]);
    assert_eq!(
        event.remove_guard(EXTENSION, b, g),
        Err(Error::UnknownGuard(g))
    );
    assert_eq!(event.stats().guards, 2);
}

// --- Ordering -------------------------------------------------------------

#[test]
fn ordering_first_last_before_after_and_reorder() {
    let (event, _) = Event::new("E", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    let log = Log::default();
    let a = event
        .install(EXTENSION, Install::new(log.handler("a")))
        .unwrap();
    let z = event
        .install(EXTENSION, Install::new(log.handler("z")).order(Order::Last))
        .unwrap();
    let b = event
        .install(EXTENSION, Install::new(log.handler("b")))
        .unwrap();
    let f = event
        .install(
            EXTENSION,
            Install::new(log.handler("f")).order(Order::First),
        )
        .unwrap();
    let c = event
        .install(
            EXTENSION,
            Install::new(log.handler("c")).order(Order::Before(a)),
        )
        .unwrap();
    let d = event
        .install(
            EXTENSION,
            Install::new(log.handler("d")).order(Order::After(z)),
        )
        .unwrap();
    event.raise(&mut (0,)).unwrap();
    assert_eq!(log.take(), vec!["f", "c", "a", "b", "z", "d"]);
    assert_eq!(event.order_of(c), Some(vec![Order::Before(a)]));

    // Change: move f after b (by default at the end, the latest place).
    event.reorder(EXTENSION, f, &[Order::After(b)]).unwrap();
    event.raise(&mut (0,)).unwrap();
    assert_eq!(log.take(), vec!["c", "a", "b", "z", "d", "f"]);
    event
        .reorder(EXTENSION, f, &[Order::After(b), Order::Before(z)])
        .unwrap();
    event.raise(&mut (0,)).unwrap();
    assert_eq!(log.take(), vec!["c", "a", "b", "f", "z", "d"]);
    assert_eq!(
        event.order_of(f),
        Some(vec![Order::After(b), Order::Before(z)])
    );

    // Constraints that cannot be met are refused and change nothing.
    assert_eq!(
        event.reorder(EXTENSION, a, &[Order::Before(c)]),
        Err(Error::Order(OrderError::Unsatisfiable)),
        "c must stay before a"
    );
    assert_eq!(
        event.install(
            EXTENSION,
            Install::new(log.handler("x"))
                .order(Order::After(b))
                .order(Order::Before(a))
        ),
        Err(Error::Order(OrderError::Unsatisfiable))
    );
    assert_eq!(
        event.install(
            EXTENSION,
            Install::new(log.handler("x")).order(Order::Before(BindingId::INTRINSIC))
        ),
        Err(Error::Order(OrderError::UnknownBinding(
            BindingId::INTRINSIC
        )))
    );
    assert_eq!(
        event.reorder(EXTENSION, d, &[Order::Before(d)]),
        Err(Error::Order(OrderError::SelfReference))
    );
    event.raise(&mut (0,)).unwrap();
    assert_eq!(log.take(), vec!["c", "a", "b", "f", "z", "d"]);
}

// --- Filters and by-reference arguments ----------------------------------

#[test]
fn filters_change_what_later_handlers_see_but_not_the_raiser() {
    let (event, authority) = Event::<(u64, u64), u64>::new("E", |a| a.0 + a.1);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    event
        .set_result_handler(&authority, Some(Arc::new(|_, last| last)))
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    event
        .install(
            EXTENSION,
            Install::new(Handler::by_reference(|a: &mut (u64, u64)| {
                a.0 = 1000; // e.g. translate a DOS name into a Unix one
                0
            }))
            .filter(),
        )
        .unwrap();
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(move |a: &(u64, u64)| {
                s.lock().unwrap().push(a.0);
                a.0 + a.1
            }))
            // Guards after the filter see the filtered values too.
            .guard(Guard::new(|a: &(u64, u64)| a.0 == 1000)),
        )
        .unwrap();
    let mut args = (1, 2);
    assert_eq!(event.raise(&mut args), Ok(1002));
    assert_eq!(
        args,
        (1, 2),
        "the raiser's by-value arguments are preserved"
    );
    assert_eq!(*seen.lock().unwrap(), vec![1000]);
}

#[test]
fn by_reference_handler_must_be_a_filter() {
    let (event, _) = Event::<(u64, u64), u64>::new("E", |a| a.0);
    let by_ref = Handler::by_reference(|a: &mut (u64, u64)| a.0);
    assert_eq!(
        event.install(EXTENSION, Install::new(by_ref)),
        Err(Error::Type(TypeError::ByReferenceNeedsFilter { index: 0 }))
    );
}

#[test]
fn var_arguments_reach_the_raiser() {
    // MachineTrap.Syscall(strand, VAR state) from figure 2 of 003.
    fn syscall(args: &mut (u32, Var<u64>)) {
        args.1 .0 = 1; // the default: ENOSYS-ish
    }
    let (event, _) = Event::<(u32, Var<u64>), ()>::builder("MachineTrap.Syscall")
        .intrinsic_by_reference(syscall)
        .build();
    assert!(event.is_intrinsic_only());
    let mut args = (5, Var(0));
    event.raise(&mut args).unwrap();
    assert_eq!(args.1 .0, 1);

    let handler = Handler::by_reference(|a: &mut (u32, Var<u64>)| {
        a.0 = 99; // by-value parameter: must not reach the raiser
        a.1 .0 += 10;
    });
    // A Rust closure takes all its parameters by reference, including the
    // by-value `strand`: that makes it a filter (003 §2.4).
    assert_eq!(
        event.install(EXTENSION, Install::new(handler.clone())),
        Err(Error::Type(TypeError::ByReferenceNeedsFilter { index: 0 }))
    );
    event
        .install(
            EXTENSION,
            Install::new(handler)
                .filter()
                .guard(Guard::new(|a: &(u32, Var<u64>)| a.0 == 5)),
        )
        .unwrap();
    let mut args = (5, Var(0));
    event.raise(&mut args).unwrap();
    assert_eq!(
        args,
        (5, Var(11)),
        "VAR changes come back; by-value ones do not"
    );

    // A handler reading the VAR parameter by value does not type-check.
    assert_eq!(
        event.install(
            EXTENSION,
            Install::new(Handler::new(|_: &(u32, Var<u64>)| ()))
        ),
        Err(Error::Type(TypeError::MustBeByReference { index: 1 }))
    );
}

// --- Results ---------------------------------------------------------------

#[test]
fn results_one_several_none_default() {
    let (event, authority) = Event::<(u64,), bool>::new("VM.PageFault", |_| false);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    // None fired, no default: a clear error.
    assert_eq!(
        event.raise(&mut (1,)),
        Err(RaiseFailure::NoHandler {
            event: "VM.PageFault"
        }
        .into())
    );
    // Default handler: runs only when no other handler fires.
    event
        .set_default(&authority, Some(Handler::new(|a: &(u64,)| a.0 == 42)))
        .unwrap();
    assert_eq!(event.raise(&mut (42,)), Ok(true));
    assert_eq!(event.raise(&mut (1,)), Ok(false));
    // One handler fires: its result.
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(|_: &(u64,)| true)).guard(Guard::new(|a: &(u64,)| a.0 < 10)),
        )
        .unwrap();
    assert_eq!(event.raise(&mut (1,)), Ok(true));
    assert_eq!(event.raise(&mut (11,)), Ok(false), "guard false: default");
    // Several fire: the result handler folds them (logical or, as VM does).
    event
        .install(EXTENSION, Install::new(Handler::new(|_: &(u64,)| false)))
        .unwrap();
    assert_eq!(
        event.raise(&mut (1,)),
        Ok(false),
        "without a result handler the last wins"
    );
    event
        .set_result_handler(&authority, Some(Arc::new(|a: bool, b: bool| a || b)))
        .unwrap();
    assert_eq!(event.raise(&mut (1,)), Ok(true));
}

// --- Modes ---------------------------------------------------------------------

#[test]
fn asynchronous_handlers_run_on_another_thread() {
    let (event, _) = Event::<(u64,), ()>::builder("Tracer.Syscall")
        .intrinsic(|_| ())
        .spawner(Arc::new(ThreadSpawner))
        .build();
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = Mutex::new(tx);
    let raiser = thread::current().id();
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(move |a: &(u64,)| {
                thread::sleep(Duration::from_millis(20));
                tx.lock()
                    .unwrap()
                    .send((thread::current().id(), a.0))
                    .unwrap();
            }))
            .mode(Mode::Asynchronous),
        )
        .unwrap();
    event.raise(&mut (7,)).unwrap();
    assert!(
        rx.try_recv().is_err(),
        "the raiser did not wait for the handler"
    );
    let (id, value) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_ne!(id, raiser);
    assert_eq!(value, 7);
    assert_eq!(event.stats().spawned, 1);
}

#[test]
fn asynchronous_refused_where_it_would_break_procedure_call_semantics() {
    let spawner: Arc<dyn Spawner> = Arc::new(ThreadSpawner);
    // By-reference (VAR) event arguments.
    let (var_event, _) = Event::<(Var<u64>,), ()>::builder("V")
        .intrinsic_by_reference(|_| ())
        .spawner(spawner.clone())
        .build();
    let h = Handler::by_reference(|_: &mut (Var<u64>,)| ());
    assert_eq!(
        var_event.install(EXTENSION, Install::new(h).mode(Mode::Asynchronous)),
        Err(Error::AsyncByReference)
    );
    // A result but no default handler.
    let (result_event, authority) = Event::<(u64,), u64>::builder("R")
        .intrinsic(double)
        .spawner(spawner.clone())
        .build();
    let h = Handler::new(|a: &(u64,)| a.0);
    assert_eq!(
        result_event.install(EXTENSION, Install::new(h.clone()).mode(Mode::Asynchronous)),
        Err(Error::AsyncNeedsDefault)
    );
    result_event
        .set_default(&authority, Some(Handler::new(|_: &(u64,)| 5)))
        .unwrap();
    result_event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    result_event
        .install(EXTENSION, Install::new(h).mode(Mode::Asynchronous))
        .unwrap();
    assert_eq!(
        result_event.raise(&mut (1,)),
        Ok(5),
        "the raiser gets the default's result"
    );
    assert_eq!(
        result_event.set_default(&authority, None),
        Err(Error::AsyncNeedsDefault)
    );
    // No spawner.
    let (plain, _) = Event::<(u64,), ()>::new("P", |_| ());
    assert_eq!(
        plain.install(
            EXTENSION,
            Install::new(Handler::new(|_: &(u64,)| ())).mode(Mode::Asynchronous)
        ),
        Err(Error::NoSpawner)
    );
}

/// A stand-in for the Wasm engine: burns `cost` units and is terminated
/// when the budget is smaller.
fn metered(cost: u64) -> Handler<(u64,), u64> {
    Handler::dynamic(
        Signature::new(&[ValueType::U64], Some(ValueType::U64)),
        move |_: Option<&(dyn Any + Send + Sync)>, args: &mut DynArgs<'_>, inv: &Invocation| {
            if inv
                .budget
                .and_then(|b| b.fuel)
                .is_some_and(|fuel| fuel < cost)
            {
                return Err(Fault::BudgetExhausted);
            }
            match args.get(0) {
                Some(Value::U64(v)) => Ok(Some(Value::U64(v + cost))),
                _ => Err(Fault::Trap("bad argument".into())),
            }
        },
    )
}

#[test]
fn ephemeral_handlers_must_accept_termination_and_are_bounded() {
    let (event, authority) = Event::new("Net.PacketArrived", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    assert_eq!(
        event.install(
            EXTENSION,
            Install::new(metered(5)).mode(Mode::Ephemeral(Budget::fuel(10)))
        ),
        Err(Error::NotEphemeral)
    );
    event
        .install(
            EXTENSION,
            Install::new(metered(5).ephemeral()).mode(Mode::Ephemeral(Budget::fuel(10))),
        )
        .unwrap();
    assert_eq!(event.raise(&mut (1,)), Ok(6));
    let runaway = event
        .install(
            EXTENSION,
            Install::new(metered(50).ephemeral()).mode(Mode::Ephemeral(Budget::fuel(10))),
        )
        .unwrap();
    assert_eq!(
        event.raise(&mut (1,)),
        Ok(6),
        "the terminated handler gives no result"
    );
    assert_eq!(event.stats().terminated, 1);
    // Alone, a terminated handler leaves the raiser with an error...
    event.remove(EXTENSION, event.bindings()[0]).unwrap();
    assert_eq!(
        event.raise(&mut (1,)),
        Err(RaiseFailure::Faulted {
            event: "Net.PacketArrived",
            fault: Fault::BudgetExhausted
        }
        .into())
    );
    // ...or the default.
    event
        .set_default(&authority, Some(Handler::new(|_: &(u64,)| 0)))
        .unwrap();
    assert_eq!(event.raise(&mut (1,)), Ok(0));
    assert_eq!(
        event.mode_of(runaway),
        Some(Mode::Ephemeral(Budget::fuel(10)))
    );
}

/// Typed code that may fail (what the runtime installs for native Wasm
/// handlers): its result reaches the raiser, its budget is the
/// installation's, and a fault is counted and turns into the default or
/// an error, as for runtime-typed code.
#[test]
fn fallible_typed_handlers_get_the_tuple_and_their_faults_are_contained() {
    let (event, authority) = Event::new("Net.PacketArrived", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    let signature = Signature::new(&[ValueType::U64], Some(ValueType::U64));
    let fallible = |cost: u64| {
        Handler::fallible(
            signature.clone(),
            move |args: &(u64,), invocation: &Invocation| match invocation
                .budget
                .and_then(|budget| budget.fuel)
            {
                Some(fuel) if fuel < cost => Err(Fault::BudgetExhausted),
                _ if args.0 == 13 => Err(Fault::Trap("unlucky".into())),
                _ => Ok(args.0 * 10 + cost),
            },
        )
        .ephemeral()
    };
    let binding = event.install(EXTENSION, Install::new(fallible(2))).unwrap();
    assert_eq!(event.raise(&mut (4,)), Ok(42));
    assert_eq!(
        event.raise(&mut (13,)),
        Err(RaiseFailure::Faulted {
            event: "Net.PacketArrived",
            fault: Fault::Trap("unlucky".into())
        }
        .into())
    );
    assert_eq!(event.stats().faults, 1);
    event
        .set_default(&authority, Some(Handler::new(|_: &(u64,)| 7)))
        .unwrap();
    assert_eq!(event.raise(&mut (13,)), Ok(7), "the default answers");
    event.remove(EXTENSION, binding).unwrap();
    event
        .install(
            EXTENSION,
            Install::new(fallible(50)).mode(Mode::Ephemeral(Budget::fuel(10))),
        )
        .unwrap();
    assert_eq!(event.raise(&mut (4,)), Ok(7), "terminated: the default");
    assert_eq!(event.stats().terminated, 1);
    event.remove(EXTENSION, event.bindings()[0]).unwrap();
    let faults = event.stats().faults;
    // Guarded: a false guard leaves the raise to the default.
    event
        .install(
            EXTENSION,
            Install::new(fallible(2)).guard(Guard::new(|args: &(u64,)| args.0 != 5)),
        )
        .unwrap();
    assert_eq!(event.raise(&mut (5,)), Ok(7), "guard false: the default");
    assert_eq!(event.raise(&mut (6,)), Ok(62), "guard true: the handler");
    assert_eq!(event.stats().faults, faults, "no new fault");
    // A wrong signature is refused at installation, as for dynamic code.
    let wrong = Handler::fallible(
        Signature::new(&[ValueType::U64], Some(ValueType::I32)),
        |_: &(u64,), _: &Invocation| Ok(0u64),
    );
    assert!(event.install(EXTENSION, Install::new(wrong)).is_err());
}

#[test]
fn fallible_typed_code_in_lists_of_several_is_counted_and_contained_cached_or_not() {
    let (event, authority) = Event::new("Net.PacketArrived", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    let signature = Signature::new(&[ValueType::U64], Some(ValueType::U64));
    // Faults on its `unlucky` argument, else answers `args * 10 + tag`.
    let fallible = |tag: u64, unlucky: u64| {
        Handler::fallible(
            signature.clone(),
            move |args: &(u64,), invocation: &Invocation| match invocation
                .budget
                .and_then(|budget| budget.fuel)
            {
                Some(fuel) if fuel < 5 => Err(Fault::BudgetExhausted),
                _ if args.0 == unlucky => Err(Fault::Trap("unlucky".into())),
                _ => Ok(args.0 * 10 + tag),
            },
        )
        .ephemeral()
    };
    event
        .install(EXTENSION, Install::new(fallible(1, 13)))
        .unwrap();
    let second = event
        .install(
            EXTENSION,
            Install::new(fallible(2, 14)).guard(Guard::new(|args: &(u64,)| args.0 != 5)),
        )
        .unwrap();
    let mut cache = RaiseCache::new();
    for cached in [false, true] {
        let mut raise = |value: u64| match cached {
            true => event.raise_cached(&mut cache, &mut (value,)),
            false => event.raise(&mut (value,)),
        };
        let faults = event.stats().faults;
        assert_eq!(raise(4), Ok(42), "the last handler's result");
        assert_eq!(raise(5), Ok(51), "the second's guard is false");
        assert_eq!(raise(13), Ok(132), "the first faults, the second answers");
        assert_eq!(event.stats().faults, faults + 1, "and its fault is counted");
        assert_eq!(raise(14), Ok(141), "the second faults, the first answered");
        assert_eq!(event.stats().faults, faults + 2);
    }
    // Both fault: the raiser gets the last fault, or the default.
    event.remove(EXTENSION, second).unwrap();
    event
        .install(EXTENSION, Install::new(fallible(2, 13)))
        .unwrap();
    let faulted = Err(RaiseFailure::Faulted {
        event: "Net.PacketArrived",
        fault: Fault::Trap("unlucky".into()),
    }
    .into());
    assert_eq!(event.raise(&mut (13,)), faulted);
    assert_eq!(event.raise_cached(&mut cache, &mut (13,)), faulted);
    // A Rust handler in the same list, and a budget too small for one.
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(|args: &(u64,)| args.0)),
        )
        .unwrap();
    assert_eq!(event.raise_cached(&mut cache, &mut (13,)), Ok(13));
    event
        .install(
            EXTENSION,
            Install::new(fallible(3, 99)).mode(Mode::Ephemeral(Budget::fuel(1))),
        )
        .unwrap();
    let terminated = event.stats().terminated;
    assert_eq!(event.raise_cached(&mut cache, &mut (6,)), Ok(6));
    assert_eq!(event.stats().terminated, terminated + 1);
    event
        .set_default(&authority, Some(Handler::new(|_: &(u64,)| 7)))
        .unwrap();
    for binding in event.bindings() {
        event.remove(EXTENSION, binding).unwrap();
    }
    event
        .install(EXTENSION, Install::new(fallible(1, 13)))
        .unwrap();
    assert_eq!(
        event.raise_cached(&mut cache, &mut (13,)),
        Ok(7),
        "the default"
    );
    assert_eq!(event.raise_cached(&mut cache, &mut (3,)), Ok(31));
}

#[test]
fn authorizer_can_require_ephemeral() {
    let (event, authority) = Event::new("Net.PacketArrived", double);
    event
        .set_authorizer(
            &authority,
            Some(Arc::new(|_: &Request<'_>, grant: &mut Grant<(u64,)>| {
                grant.require_ephemeral(Budget::fuel(100));
                Ok(())
            })),
        )
        .unwrap();
    assert_eq!(
        event.install(EXTENSION, Install::new(metered(1))),
        Err(Error::NotEphemeral)
    );
    let b = event
        .install(EXTENSION, Install::new(metered(1).ephemeral()))
        .unwrap();
    assert_eq!(event.mode_of(b), Some(Mode::Ephemeral(Budget::fuel(100))));
}

// --- Type checking ----------------------------------------------------------

#[test]
fn runtime_signatures_are_type_checked_at_install() {
    let (event, _) = Event::<(u32, i64), i64>::new("E", |a| a.1);
    let code = |_: Option<&(dyn Any + Send + Sync)>, _: &mut DynArgs<'_>, _: &Invocation| {
        Ok(Some(Value::I64(0)))
    };
    let install =
        |sig: Signature| event.install(EXTENSION, Install::new(Handler::dynamic(sig, code)));
    assert_eq!(
        install(Signature::new(&[ValueType::U32], Some(ValueType::I64))),
        Err(Error::Type(TypeError::Arity {
            expected: 2,
            found: 1
        }))
    );
    assert_eq!(
        install(Signature::new(
            &[ValueType::U32, ValueType::I32],
            Some(ValueType::I64)
        )),
        Err(Error::Type(TypeError::Param {
            index: 1,
            expected: ValueType::I64,
            found: ValueType::I32
        }))
    );
    assert_eq!(
        install(Signature::new(&[ValueType::U32, ValueType::I64], None)),
        Err(Error::Type(TypeError::Result {
            expected: Some(ValueType::I64),
            found: None
        }))
    );
    assert!(install(Signature::new(
        &[ValueType::U32, ValueType::I64],
        Some(ValueType::I64)
    ))
    .is_ok());

    // Guards: same parameters, Bool result.
    let guard_code = |_: Option<&(dyn Any + Send + Sync)>, _: &DynArgs<'_>| true;
    let h = || Handler::new(|a: &(u32, i64)| a.1);
    assert_eq!(
        event.install(
            EXTENSION,
            Install::new(h()).guard(Guard::dynamic(
                Signature::new(&[ValueType::U32, ValueType::I64], Some(ValueType::I32)),
                guard_code
            ))
        ),
        Err(Error::Type(TypeError::GuardResult {
            found: Some(ValueType::I32)
        }))
    );
    assert_eq!(
        event.install(
            EXTENSION,
            Install::new(h()).guard(Guard::dynamic(
                Signature::new(&[ValueType::U32], Some(ValueType::Bool)),
                guard_code
            ))
        ),
        Err(Error::Type(TypeError::Arity {
            expected: 2,
            found: 1
        }))
    );
    // Declarative guards: only existing scalar fields.
    assert!(matches!(
        event.install(
            EXTENSION,
            Install::new(h()).guard(Guard::when(Predicate::equals(Field::Param(5), 1)))
        ),
        Err(Error::Type(TypeError::Field { .. }))
    ));
    assert!(matches!(
        event.install(
            EXTENSION,
            Install::new(h()).guard(Guard::when(Predicate::equals(Field::Named(0), 1)))
        ),
        Err(Error::Type(TypeError::Field { .. }))
    ));
}

#[test]
fn closure_type_is_checked_at_install() {
    struct Space(u32);
    let (event, _) = Event::<(u32,), u32>::new("E", |a| a.0);
    let code = |closure: Option<&(dyn Any + Send + Sync)>, _: &mut DynArgs<'_>, _: &Invocation| {
        let space = closure
            .and_then(|c| c.downcast_ref::<Space>())
            .ok_or(Fault::BadResult)?;
        Ok(Some(Value::U32(space.0)))
    };
    let sig = Signature::new(&[ValueType::U32], Some(ValueType::U32));
    let wrong = Handler::dynamic(sig.clone(), code)
        .with_dynamic_closure(TypeId::of::<Space>(), Arc::new(5u64));
    assert!(matches!(
        event.install(EXTENSION, Install::new(wrong)),
        Err(Error::Type(TypeError::Closure { .. }))
    ));
    let right = Handler::dynamic(sig, code)
        .with_dynamic_closure(TypeId::of::<Space>(), Arc::new(Space(77)));
    event.install(EXTENSION, Install::new(right)).unwrap();
    assert_eq!(event.raise(&mut (1,)), Ok(77));
}

#[test]
fn runtime_typed_filter_writes_only_what_it_takes_by_reference() {
    let (event, authority) = Event::<(u32, u32), u32>::new("E", |a| a.0 + a.1);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    event
        .set_result_handler(&authority, Some(Arc::new(|_, b| b)))
        .unwrap();
    let writes = Arc::new(Mutex::new(Vec::new()));
    let w = writes.clone();
    // Takes parameter 1 by reference (a filter), parameter 0 by value.
    let sig =
        Signature::new(&[ValueType::U32, ValueType::U32], Some(ValueType::U32)).by_reference(1);
    let filter = Handler::dynamic(
        sig,
        move |_: Option<&(dyn Any + Send + Sync)>, args: &mut DynArgs<'_>, _: &Invocation| {
            w.lock().unwrap().push(args.set(0, Value::U32(50)).is_ok());
            w.lock().unwrap().push(args.set(1, Value::I32(50)).is_ok());
            w.lock().unwrap().push(args.set(1, Value::U32(50)).is_ok());
            Ok(Some(Value::U32(0)))
        },
    );
    assert!(
        event
            .install(EXTENSION, Install::new(filter.clone()))
            .is_err(),
        "needs .filter()"
    );
    event
        .install(EXTENSION, Install::new(filter).filter())
        .unwrap();
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(|a: &(u32, u32)| a.0 + a.1)),
        )
        .unwrap();
    let mut args = (1, 2);
    assert_eq!(event.raise(&mut args), Ok(51));
    assert_eq!(
        *writes.lock().unwrap(),
        vec![false, false, true],
        "by-value and wrong-type writes refused"
    );
    assert_eq!(args, (1, 2));
}

// --- Access control -----------------------------------------------------------

#[test]
fn authorizer_denies_imposes_guards_order_and_sees_every_change() {
    // MachineTrap.Syscall and AuthorizeSyscall from figure 3 of 003: the
    // imposed guard confines each extension to its own address space.
    let (event, authority) = Event::<(u64,), u64>::new("MachineTrap.Syscall", |_| 0);
    let consulted = Arc::new(Mutex::new(Vec::new()));
    let c = consulted.clone();
    let intrinsic_first = Order::After(BindingId::INTRINSIC);
    event
        .set_authorizer(
            &authority,
            Some(Arc::new(
                move |request: &Request<'_>, grant: &mut Grant<(u64,)>| {
                    c.lock()
                        .unwrap()
                        .push((request.operation, request.requester));
                    if request.requester == OTHER
                        && request.credential.and_then(|c| c.downcast_ref::<&str>())
                            != Some(&"password")
                    {
                        return Err(Denied::new("unknown extension"));
                    }
                    if request.operation == Operation::Install {
                        let space = request.requester.0; // the installer's address space
                        grant
                            .impose_guard(Guard::with_closure(space, |space: &u64, a: &(u64,)| {
                                a.0 == *space
                            }));
                        grant.impose_order(intrinsic_first);
                    }
                    Ok(())
                },
            )),
        )
        .unwrap();
    let log = Log::default();
    // Denied.
    assert_eq!(
        event.install(OTHER, Install::new(log.handler("other"))),
        Err(Error::Denied(Denied::new("unknown extension")))
    );
    // Allowed with a credential, and confined to its space.
    let credential: Arc<dyn Any + Send + Sync> = Arc::new("password");
    let other = event
        .install(
            OTHER,
            Install::new(log.handler("other")).credential(credential),
        )
        .unwrap();
    let mine = event.install(
        EXTENSION,
        Install::new(log.handler("mine")).order(Order::First),
    );
    assert_eq!(
        mine,
        Err(Error::Order(OrderError::Unsatisfiable)),
        "imposed order beats First"
    );
    let mine = event
        .install(EXTENSION, Install::new(log.handler("mine")))
        .unwrap();
    event.raise(&mut (7,)).unwrap();
    event.raise(&mut (8,)).unwrap();
    event.raise(&mut (9,)).unwrap();
    assert_eq!(
        log.take(),
        vec!["mine", "other"],
        "imposed guards filter raises"
    );
    assert_eq!(event.guards_of(mine), Some((0, 1)));
    assert_eq!(event.order_of(mine), Some(vec![intrinsic_first]));
    // The installer cannot remove the imposed guard...
    assert!(matches!(
        event.remove_guard(
            EXTENSION,
            mine,
            GuardId::clone(
                &event
                    .add_guard(EXTENSION, mine, Guard::new(|_: &(u64,)| true))
                    .unwrap()
            )
        ),
        Ok(())
    ));
    // ...the authority can.
    // (Guard ids are not exposed for imposed guards through the grant; impose and remove one explicitly.)
    let g = event
        .impose_guard(&authority, mine, Guard::new(|_: &(u64,)| false))
        .unwrap();
    event.raise(&mut (7,)).unwrap();
    assert_eq!(log.take(), Vec::<&str>::new());
    event.remove_imposed_guard(&authority, mine, g).unwrap();
    event.raise(&mut (7,)).unwrap();
    assert_eq!(log.take(), vec!["mine"]);
    // Removal and reordering are authorized too.
    assert!(matches!(event.remove(OTHER, other), Err(Error::Denied(_))));
    event.reorder(EXTENSION, mine, &[]).unwrap();
    event.remove(EXTENSION, mine).unwrap();
    let ops: Vec<Operation> = consulted
        .lock()
        .unwrap()
        .iter()
        .map(|(op, _)| *op)
        .collect();
    assert!(ops.contains(&Operation::Install));
    assert!(ops.contains(&Operation::AddGuard));
    assert!(ops.contains(&Operation::RemoveGuard));
    assert!(ops.contains(&Operation::Remove));
    assert!(ops.contains(&Operation::Reorder));
}

#[test]
fn only_the_authority_controls_the_event() {
    let (event, _) = Event::new("E", double);
    let (_, other_authority) = Event::new("F", double);
    assert_eq!(
        event.set_authorizer(&other_authority, None),
        Err(Error::NotAuthority)
    );
    assert_eq!(
        event.set_default(&other_authority, None),
        Err(Error::NotAuthority)
    );
    assert_eq!(
        event.define_field(&other_authority, "x", |a| a.0),
        Err(Error::NotAuthority)
    );
    assert_eq!(
        event.impose_guard(
            &other_authority,
            BindingId::INTRINSIC,
            Guard::new(|_: &(u64,)| true)
        ),
        Err(Error::NotAuthority)
    );
    let b = event
        .install(EXTENSION, Install::new(Handler::new(|_: &(u64,)| 1)))
        .unwrap();
    assert_eq!(event.remove(OTHER, b), Err(Error::NotInstaller));
    assert_eq!(
        event.reorder(OTHER, b, &[Order::First]),
        Err(Error::NotInstaller)
    );
    event.remove(Principal::KERNEL, b).unwrap();
}

// --- Accounting -----------------------------------------------------------------

#[test]
fn accounting_counts_raises_time_handlers_and_guards() {
    let (event, _) = Event::new("Udp.PacketArrived", double);
    let now = Arc::new(AtomicU64::new(0));
    let n = now.clone();
    // Each clock read advances 5 ns: each raise "takes" 5 ns.
    let clock: Arc<dyn Clock> = Arc::new(move || n.fetch_add(5, Ordering::Relaxed));
    event.raise(&mut (1,)).unwrap();
    assert_eq!(event.stats().raised, 0, "off by default");
    event.enable_accounting(Some(clock));
    assert!(
        !event.is_intrinsic_only(),
        "counting intrinsic raises needs the dispatcher"
    );
    for _ in 0..10 {
        event.raise(&mut (1,)).unwrap();
    }
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(|_: &(u64,)| 0))
                .guard(Guard::new(|_: &(u64,)| true))
                .guard(Guard::new(|_: &(u64,)| true)),
        )
        .unwrap();
    let mut cache = RaiseCache::new();
    event.raise_cached(&mut cache, &mut (1,)).unwrap();
    let stats = event.stats();
    assert_eq!(stats.raised, 11);
    assert_eq!(stats.time_ns, 55);
    assert_eq!(stats.handlers, 2);
    assert_eq!(stats.guards, 2);
    event.disable_accounting();
    event.raise(&mut (1,)).unwrap();
    assert_eq!(event.stats().raised, 11);
}

// --- Declarative guards ------------------------------------------------------------

#[test]
fn declarative_port_guards_select_by_table_lookup() {
    #[derive(Clone)]
    struct Packet {
        destination_port: u16,
    }
    dispatch::opaque_arg!(Packet);
    let (event, authority) = Event::<(Packet,), u32>::new("Udp.PacketArrived", |_| 0);
    let port = event
        .define_field(&authority, "destination_port", |a: &(Packet,)| {
            a.0.destination_port as u64
        })
        .unwrap();
    assert_eq!(event.field("destination_port"), Some(port));
    for p in 0..500u32 {
        event
            .install(
                Principal(p as u64),
                Install::new(Handler::new(move |_: &(Packet,)| 1000 + p))
                    .guard(Guard::when(Predicate::equals(port, 2000 + p as u64))),
            )
            .unwrap();
    }
    // A range guard and a mask guard on the same field, plus a procedural one.
    let low = event
        .install(
            EXTENSION,
            Install::new(Handler::new(|_: &(Packet,)| 1))
                .guard(Guard::when(Predicate::in_range(port, 0, 1023))),
        )
        .unwrap();
    event
        .install(
            EXTENSION,
            Install::new(Handler::new(|_: &(Packet,)| 2))
                .guard(Guard::when(Predicate::masked(port, 0xff00, 0x0700)))
                .guard(Guard::new(|a: &(Packet,)| {
                    a.0.destination_port.is_multiple_of(2)
                })),
        )
        .unwrap();
    let raise = |p: u16| {
        event.raise(&mut (Packet {
            destination_port: p,
        },))
    };
    assert_eq!(raise(2250), Ok(1250));
    assert_eq!(raise(2499), Ok(1499));
    assert_eq!(raise(53), Ok(1));
    assert_eq!(raise(0x0702), Ok(2));
    assert_eq!(
        raise(0x0703),
        Ok(0),
        "procedural guard false: only the intrinsic fires"
    );
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    assert_eq!(
        raise(3000),
        Err(RaiseFailure::NoHandler {
            event: "Udp.PacketArrived"
        }
        .into())
    );
    event.remove(EXTENSION, low).unwrap();
    assert_eq!(
        raise(53),
        Err(RaiseFailure::NoHandler {
            event: "Udp.PacketArrived"
        }
        .into())
    );
}

/// `Handler::fallible_guarded`: alone on its event, guard and code are one
/// routine (cached or not) that still tests the guard, passes the
/// invocation's budget and contains faults; the guard is an ordinary one
/// of the installation, and a second guard (own or imposed) or a second
/// installation takes the general routines, which give the same answers.
#[test]
fn fused_fallible_code_tests_its_guard_passes_its_budget_and_contains_faults() {
    let (event, _authority) = Event::new("Net.PacketArrived", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    let signature = Signature::new(&[ValueType::U64], Some(ValueType::U64));
    let guard_tests = Arc::new(AtomicU64::new(0));
    let tests = guard_tests.clone();
    let handler = Handler::fallible_guarded(
        signature,
        move |args: &(u64,)| {
            tests.fetch_add(1, Ordering::Relaxed);
            args.0 != 5
        },
        |args: &(u64,), invocation: &Invocation| match invocation
            .budget
            .and_then(|budget| budget.fuel)
        {
            Some(fuel) if fuel < 5 => Err(Fault::BudgetExhausted),
            _ if args.0 == 13 => Err(Fault::Trap("unlucky".into())),
            _ => Ok(args.0 * 10),
        },
    )
    .ephemeral();
    let binding = event
        .install(EXTENSION, Install::new(handler.clone()))
        .unwrap();
    assert_eq!(
        event.guards_of(binding),
        Some((1, 0)),
        "the guard is the installation's"
    );
    let faulted = Err(RaiseFailure::Faulted {
        event: "Net.PacketArrived",
        fault: Fault::Trap("unlucky".into()),
    }
    .into());
    let mut cache = RaiseCache::new();
    let mut check = |label: &str| {
        for cached in [false, true] {
            let mut raise = |value: u64| match cached {
                true => event.raise_cached(&mut cache, &mut (value,)),
                false => event.raise(&mut (value,)),
            };
            let (tests, faults) = (guard_tests.load(Ordering::Relaxed), event.stats().faults);
            assert_eq!(raise(4), Ok(40), "{label}: the code answers");
            assert_eq!(
                raise(5),
                Err(RaiseFailure::NoHandler {
                    event: "Net.PacketArrived"
                }
                .into()),
                "{label}: the guard is false, nothing answers"
            );
            assert_eq!(
                guard_tests.load(Ordering::Relaxed),
                tests + 2,
                "{label}: tested twice"
            );
            assert_eq!(raise(13), faulted, "{label}: the fault is the raiser's");
            assert_eq!(event.stats().faults, faults + 1, "{label}: and counted");
        }
    };
    check("alone");
    // Another guard of its own: the guards run separately.
    let six = event
        .add_guard(EXTENSION, binding, Guard::new(|args: &(u64,)| args.0 != 6))
        .unwrap();
    check("with a second guard");
    assert!(
        event.raise_cached(&mut cache, &mut (6,)).is_err(),
        "the second guard holds"
    );
    event.remove_guard(EXTENSION, binding, six).unwrap();
    assert_eq!(
        event.raise_cached(&mut cache, &mut (6,)),
        Ok(60),
        "fused again"
    );
    // Beside a Rust handler: the loop runs the same guard and code.
    let rust = event
        .install(EXTENSION, Install::new(Handler::new(|_: &(u64,)| 7)))
        .unwrap();
    assert_eq!(
        event.raise_cached(&mut cache, &mut (5,)),
        Ok(7),
        "the guard is still false"
    );
    assert_eq!(
        event.raise_cached(&mut cache, &mut (13,)),
        Ok(7),
        "the fault is contained"
    );
    event.remove(EXTENSION, rust).unwrap();
    // A budget too small, fused: the invocation reaches the code.
    event.remove(EXTENSION, binding).unwrap();
    event
        .install(
            EXTENSION,
            Install::new(handler).mode(Mode::Ephemeral(Budget::fuel(1))),
        )
        .unwrap();
    let terminated = event.stats().terminated;
    assert!(event.raise_cached(&mut cache, &mut (4,)).is_err());
    assert_eq!(
        event.stats().terminated,
        terminated + 1,
        "terminated, counted"
    );
}

/// `Handler::fallible_guarded_as_one`: while the installation is alone
/// with its own guard, a raise calls the combined code (with the
/// invocation's budget); with a second guard, or beside another handler,
/// the guard and the code are called one after the other instead.
#[test]
fn guard_and_code_as_one_run_together_only_while_alone() {
    let (event, _authority) = Event::new("Net.PacketArrived", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    let signature = Signature::new(&[ValueType::U64], Some(ValueType::U64));
    // Which way each raise went: the combined code, or guard then code.
    let (together, apart) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (guard_apart, code_apart, both) = (apart.clone(), apart.clone(), together.clone());
    let handler = Handler::fallible_guarded_as_one(
        signature,
        move |args: &(u64,)| {
            guard_apart.fetch_add(1, Ordering::Relaxed);
            args.0 != 5
        },
        move |args: &(u64,), _: &Invocation| {
            code_apart.fetch_add(1, Ordering::Relaxed);
            match args.0 {
                13 => Err(Fault::Trap("unlucky".into())),
                value => Ok(value * 10),
            }
        },
        move |args: &(u64,), invocation: &Invocation| {
            both.fetch_add(1, Ordering::Relaxed);
            if args.0 == 5 {
                return None;
            }
            Some(match invocation.budget.and_then(|budget| budget.fuel) {
                Some(fuel) if fuel < 5 => Err(Fault::BudgetExhausted),
                _ if args.0 == 13 => Err(Fault::Trap("unlucky".into())),
                _ => Ok(args.0 * 10),
            })
        },
    )
    .ephemeral();
    let binding = event
        .install(EXTENSION, Install::new(handler.clone()))
        .unwrap();
    assert_eq!(
        event.guards_of(binding),
        Some((1, 0)),
        "the guard is the installation's"
    );
    let no_handler = Err(RaiseFailure::NoHandler {
        event: "Net.PacketArrived",
    }
    .into());
    let faulted = Err(RaiseFailure::Faulted {
        event: "Net.PacketArrived",
        fault: Fault::Trap("unlucky".into()),
    }
    .into());
    let mut cache = RaiseCache::new();
    let mut check = |label: &str, runs_together: bool| {
        for cached in [false, true] {
            let mut raise = |value: u64| match cached {
                true => event.raise_cached(&mut cache, &mut (value,)),
                false => event.raise(&mut (value,)),
            };
            let before = (
                together.load(Ordering::Relaxed),
                apart.load(Ordering::Relaxed),
            );
            let faults = event.stats().faults;
            assert_eq!(raise(4), Ok(40), "{label}: the code answers");
            assert_eq!(raise(5), no_handler, "{label}: the guard is false");
            assert_eq!(raise(13), faulted, "{label}: the fault is the raiser's");
            assert_eq!(event.stats().faults, faults + 1, "{label}: and counted");
            let after = (
                together.load(Ordering::Relaxed),
                apart.load(Ordering::Relaxed),
            );
            // Together: three calls of the combined code; apart: three
            // guard tests and two calls of the code.
            let expected = match runs_together {
                true => (before.0 + 3, before.1),
                false => (before.0, before.1 + 5),
            };
            assert_eq!(after, expected, "{label} (cached: {cached})");
        }
    };
    check("alone", true);
    let six = event
        .add_guard(EXTENSION, binding, Guard::new(|args: &(u64,)| args.0 != 6))
        .unwrap();
    check("with a second guard", false);
    event.remove_guard(EXTENSION, binding, six).unwrap();
    check("alone again", true);
    let rust = event
        .install(EXTENSION, Install::new(Handler::new(|_: &(u64,)| 7)))
        .unwrap();
    assert_eq!(
        event.raise_cached(&mut cache, &mut (5,)),
        Ok(7),
        "beside a Rust handler, the guard is still false"
    );
    event.remove(EXTENSION, rust).unwrap();
    // The combined code gets the invocation's budget.
    event.remove(EXTENSION, binding).unwrap();
    event
        .install(
            EXTENSION,
            Install::new(handler).mode(Mode::Ephemeral(Budget::fuel(1))),
        )
        .unwrap();
    let terminated = event.stats().terminated;
    assert!(event.raise_cached(&mut cache, &mut (4,)).is_err());
    assert_eq!(
        event.stats().terminated,
        terminated + 1,
        "terminated by its budget, counted"
    );
}

/// `Event::replace_code`: the installation keeps its id, place, mode and
/// the guards added since; its first guard and its code are the new ones
/// (the lone routine too, once alone again); only the installer may, a
/// guard needs one to replace, and the type is checked.
#[test]
fn replacing_code_keeps_the_installation() {
    let (event, _authority) = Event::new("Net.PacketArrived", double);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    let signature = Signature::new(&[ValueType::U64], Some(ValueType::U64));
    let old = Handler::fallible_guarded(
        signature.clone(),
        |args: &(u64,)| args.0 != 5,
        |args: &(u64,), _: &Invocation| Ok(args.0 * 10),
    )
    .ephemeral();
    let binding = event
        .install(
            EXTENSION,
            Install::new(old).mode(Mode::Ephemeral(Budget::fuel(100))),
        )
        .unwrap();
    let six = event
        .add_guard(EXTENSION, binding, Guard::new(|args: &(u64,)| args.0 != 6))
        .unwrap();
    let (new_guard, new_code) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (guard_calls, code_calls) = (new_guard.clone(), new_code.clone());
    let new = Handler::fallible_guarded(
        signature.clone(),
        move |args: &(u64,)| {
            guard_calls.fetch_add(1, Ordering::Relaxed);
            args.0 != 5
        },
        move |args: &(u64,), invocation: &Invocation| {
            code_calls.fetch_add(1, Ordering::Relaxed);
            assert_eq!(invocation.budget, Some(Budget::fuel(100)), "the mode kept");
            Ok(args.0 * 10)
        },
    )
    .ephemeral();
    assert_eq!(
        event.replace_code(Principal(99), binding, new.clone(), None),
        Err(Error::NotInstaller),
        "only the installer"
    );
    event
        .replace_code(EXTENSION, binding, new.clone(), None)
        .unwrap();
    assert_eq!(event.bindings(), vec![binding], "the same installation");
    assert_eq!(event.guards_of(binding), Some((2, 0)), "its guards kept");
    let mut cache = RaiseCache::new();
    assert_eq!(event.raise_cached(&mut cache, &mut (4,)), Ok(40));
    assert!(
        event.raise_cached(&mut cache, &mut (6,)).is_err(),
        "the guard added since still holds"
    );
    assert!(event.raise_cached(&mut cache, &mut (5,)).is_err());
    assert_eq!(new_guard.load(Ordering::Relaxed), 3, "the new guard tests");
    assert_eq!(new_code.load(Ordering::Relaxed), 1, "the new code runs");
    event.remove_guard(EXTENSION, binding, six).unwrap();
    assert_eq!(
        event.raise_cached(&mut cache, &mut (6,)),
        Ok(60),
        "alone again: the new code's routine"
    );
    assert_eq!(new_code.load(Ordering::Relaxed), 2);
    // Once the guard it came with is removed, a guard cannot replace it
    // (not even by another guard added since).
    let (first, _) = event.guard_ids_of(binding).unwrap();
    let seven = event
        .add_guard(EXTENSION, binding, Guard::new(|args: &(u64,)| args.0 != 7))
        .unwrap();
    event.remove_guard(EXTENSION, binding, first[0]).unwrap();
    assert_eq!(
        event.replace_code(EXTENSION, binding, new.clone(), None),
        Err(Error::NoGuardToReplace(binding))
    );
    assert_eq!(
        event.guard_ids_of(binding),
        Some((vec![seven], vec![])),
        "the guard added since left in place"
    );
    // Without guards, a guard cannot replace one; a wrong type is refused.
    let plain = event
        .install(EXTENSION, Install::new(Handler::new(|_: &(u64,)| 1)))
        .unwrap();
    assert_eq!(
        event.replace_code(EXTENSION, plain, new, None),
        Err(Error::NoGuardToReplace(plain))
    );
    let wrong = Handler::fallible(
        Signature::new(&[ValueType::U32], Some(ValueType::U64)),
        |_: &(u64,), _: &Invocation| Ok(1),
    );
    assert!(matches!(
        event.replace_code(EXTENSION, plain, wrong, None),
        Err(Error::Type(_))
    ));
}
