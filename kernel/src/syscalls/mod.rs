//! System calls as events: every `syscall` from user mode raises
//! `MachineTrap.Syscall(strand, number, a0..a5)` through the dispatcher
//! (SPIN's `MachineTrap.Syscall`, the events paper's system-call example).
//!
//! The kernel's own table (`crate::core_calls`, given to [`init`]) is the
//! event's intrinsic handler at first; once the Linux personality is
//! installed ([`make_core_table_the_default`]) it is the event's *default*
//! handler instead: the personality's handler answers its processes'
//! calls and calls that table for those it leaves to the core, and the
//! table runs alone only for a process no personality claims
//! (docs/design/0007-linux-personality.md, "Where the personality sits").
//! This module is the entry: it raises the event, then acts on what the
//! calls asked of the way back to user mode (an exit, a new program, a
//! kill, a signal to deliver).
//!
//! A user thread's memory is reached only through `hal::user`'s checked
//! copies: a bad pointer is `-EFAULT`, never a kernel fault.

use alloc::{collections::BTreeMap, sync::Arc};
use core::sync::atomic::{AtomicU64, Ordering};

use dispatch::{Authority, Denied, Event, Grant, Guard, Order, Principal, RaiseCache, Request};
use hal::user::SyscallFrame;
use linux_abi::{syscall, Errno};

/// The event's arguments: the calling strand, the number, six arguments.
pub type SyscallArgs = (u64, u64, u64, u64, u64, u64, u64, u64);

/// Raise caches of the system-call entry (calls blocked at once before
/// the plain path is taken).
const RAISE_CACHES: usize = 8;

/// `MachineTrap.SyscallDone`'s arguments: the result, the number, the six
/// arguments of a call that just returned.
pub type SyscallDoneArgs = (u64, u64, u64, u64, u64, u64, u64, u64);

/// Whose calls an extension principal may handle (see [`authorize`]).
#[derive(Clone, Copy)]
struct Owner {
    /// The process.
    process: u64,
    /// For a short-circuit, the one call it answers.
    number: Option<u64>,
}

struct Syscalls {
    event: Arc<Event<SyscallArgs, i64>>,
    _authority: Authority,
    /// `MachineTrap.SyscallDone`: raised after each call of a traced
    /// process, for asynchronous handlers (the tracer).
    done: Arc<Event<SyscallDoneArgs, ()>>,
    _done_authority: Authority,
    /// Tracers bound to `done`: while there are none it is not raised.
    tracers: core::sync::atomic::AtomicUsize,
    /// The process each extension principal may observe (see
    /// [`authorize`]).
    owners: Arc<spin::Mutex<BTreeMap<Principal, Owner>>>,
    /// System calls made.
    count: AtomicU64,
    /// Raise caches: a call takes the first free one and raises through
    /// it with no atomic read-modify-write on the event's list
    /// (`Event::raise_cached`). A call that blocks inside (a shell in
    /// `wait4`) keeps its cache until it returns, hence several; a call
    /// finding all taken raises the plain way.
    caches: [spin::Mutex<RaiseCache<SyscallArgs, i64>>; RAISE_CACHES],
    /// The kernel's own table: the intrinsic handler, then the default.
    core_table: CoreTable,
}

static SYSCALLS: spin::Once<Syscalls> = spin::Once::new();

/// The kernel's own table of system calls (see [`init`]).
pub type CoreTable = fn(&SyscallArgs) -> i64;

/// Creates `MachineTrap.Syscall` with `core_table` as its intrinsic
/// handler and installs the entry into hal.
pub fn init(core_table: CoreTable) {
    SYSCALLS.call_once(|| {
        let (event, authority) = Event::new("MachineTrap.Syscall", core_table);
        let owners: Arc<spin::Mutex<BTreeMap<Principal, Owner>>> = Arc::default();
        let table = owners.clone();
        event
            .set_authorizer(
                &authority,
                Some(Arc::new(
                    move |request: &Request<'_>, grant: &mut Grant<SyscallArgs>| {
                        authorize(&table, request, grant)
                    },
                )),
            )
            .expect("the event's own authority");
        let mut done = Event::builder("MachineTrap.SyscallDone");
        if let Some(worker) = crate::async_worker::worker() {
            done = done.spawner(worker);
        }
        let (done, done_authority) = done.build();
        let table = owners.clone();
        done.set_authorizer(
            &done_authority,
            Some(Arc::new(
                move |request: &Request<'_>, grant: &mut Grant<SyscallDoneArgs>| {
                    authorize_done(&table, request, grant)
                },
            )),
        )
        .expect("the event's own authority");
        Syscalls {
            event: Arc::new(event),
            _authority: authority,
            done: Arc::new(done),
            _done_authority: done_authority,
            tracers: core::sync::atomic::AtomicUsize::new(0),
            owners,
            count: AtomicU64::new(0),
            caches: core::array::from_fn(|_| spin::Mutex::new(RaiseCache::new())),
            core_table,
        }
    });
    hal::user::set_syscall_handler(entry);
}

/// The authorizer of `MachineTrap.Syscall` (SPIN's per-application system
/// call, made safe): the kernel installs what it likes; an extension only
/// if it was loaded for a process, and then its handler sees that
/// process's calls alone (an imposed guard on the calling strand's
/// process). An observer runs before the kernel's handler, whose result
/// stands (an imposed `First`). A short-circuit sees only the one call it
/// answers, which the personality then leaves to it (see
/// `tracing::is_short_circuited`), so its result is the call's. Any other
/// extension is refused.
fn authorize(
    owners: &spin::Mutex<BTreeMap<Principal, Owner>>,
    request: &Request<'_>,
    grant: &mut Grant<SyscallArgs>,
) -> Result<(), Denied> {
    if request.requester == Principal::KERNEL {
        return Ok(());
    }
    let Some(&owner) = owners.lock().get(&request.requester) else {
        return Err(Denied::new(
            "an extension may handle only the system calls of the process it was loaded for",
        ));
    };
    let process = owner.process;
    match owner.number {
        None => {
            grant.impose_guard(Guard::new(move |args: &SyscallArgs| {
                linux_process::threads::process_of(args.0) == Some(process)
            }));
            grant.impose_order(Order::First);
        }
        Some(number) => {
            grant.impose_guard(Guard::new(move |args: &SyscallArgs| {
                args.1 == number && linux_process::threads::process_of(args.0) == Some(process)
            }));
        }
    }
    Ok(())
}

/// The authorizer of `MachineTrap.SyscallDone`: as for
/// `MachineTrap.Syscall`, an extension sees only the calls of the process
/// it was loaded for (the event is raised on the calling thread, so the
/// guard asks which process that thread runs).
fn authorize_done(
    owners: &spin::Mutex<BTreeMap<Principal, Owner>>,
    request: &Request<'_>,
    grant: &mut Grant<SyscallDoneArgs>,
) -> Result<(), Denied> {
    if request.requester == Principal::KERNEL {
        return Ok(());
    }
    let Some(&owner) = owners.lock().get(&request.requester) else {
        return Err(Denied::new(
            "an extension may trace only the system calls of the process it was loaded for",
        ));
    };
    let process = owner.process;
    grant.impose_guard(Guard::new(move |_: &SyscallDoneArgs| {
        linux_process::threads::process_of(sched::current().0) == Some(process)
    }));
    Ok(())
}

/// Lets extension `principal` handle the system calls of `process` (and
/// only those): until [`forget_owner`].
pub fn set_owner(principal: Principal, process: u64) {
    if let Some(syscalls) = SYSCALLS.get() {
        syscalls.owners.lock().insert(
            principal,
            Owner {
                process,
                number: None,
            },
        );
    }
}

/// Lets extension `principal` answer call `number` of `process` (a
/// short-circuit): until [`forget_owner`].
pub fn set_short_circuit_owner(principal: Principal, process: u64, number: u64) {
    if let Some(syscalls) = SYSCALLS.get() {
        syscalls.owners.lock().insert(
            principal,
            Owner {
                process,
                number: Some(number),
            },
        );
    }
}

/// Takes back what [`set_owner`] or [`set_short_circuit_owner`] gave.
pub fn forget_owner(principal: Principal) {
    if let Some(syscalls) = SYSCALLS.get() {
        syscalls.owners.lock().remove(&principal);
    }
}

/// `MachineTrap.SyscallDone`.
pub fn done_event() -> Option<&'static Arc<Event<SyscallDoneArgs, ()>>> {
    SYSCALLS.get().map(|syscalls| &syscalls.done)
}

/// A tracer was bound to `MachineTrap.SyscallDone` (`true`) or removed:
/// the event is raised only while some tracer is bound.
pub fn count_tracer(bound: bool) {
    if let Some(syscalls) = SYSCALLS.get() {
        if bound {
            syscalls.tracers.fetch_add(1, Ordering::Relaxed);
        } else {
            syscalls.tracers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The event (for the shell's `events`, tests and extensions).
pub fn event() -> Option<&'static Arc<Event<SyscallArgs, i64>>> {
    SYSCALLS.get().map(|syscalls| &syscalls.event)
}

/// System calls made since boot.
pub fn count() -> u64 {
    SYSCALLS
        .get()
        .map_or(0, |syscalls| syscalls.count.load(Ordering::Relaxed))
}

/// The calling strand's identifier in the event's arguments.
fn current_strand() -> u64 {
    sched::current().0
}

/// hal's system-call entry: raise the event, return its result, or end the
/// thread if it asked to exit or was killed.
fn entry(frame: &mut SyscallFrame) {
    let Some(syscalls) = SYSCALLS.get() else {
        frame.set_result(Errno::ENOSYS.as_negative() as u64);
        return;
    };
    syscalls.count.fetch_add(1, Ordering::Relaxed);
    let strand = current_strand();
    let [a0, a1, a2, a3, a4, a5] = frame.args();
    let mut args = (strand, frame.number(), a0, a1, a2, a3, a4, a5);
    let number = args.1;
    // `rt_sigreturn` rewrites the whole return to user mode, which the
    // event's arguments do not carry: it belongs to the trap path, as the
    // delivery of signals does, and is not raised.
    if number == syscall::RT_SIGRETURN {
        if let Some(outcome) = linux_process::signals::sigreturn(frame) {
            if let Some(signal) = outcome.or_else(::process::pending_kill) {
                linux_process::threads::killed(signal);
            }
            return;
        }
    }
    let forks = matches!(number, syscall::FORK | syscall::VFORK | syscall::CLONE);
    if forks {
        linux_process::save_fork_registers(strand, frame.registers(), hal::user::fs_base());
    }
    let free = syscalls.caches.iter().find_map(|cache| cache.try_lock());
    let raised = match free {
        Some(mut cache) => syscalls.event.raise_cached(&mut cache, &mut args),
        None => syscalls.event.raise(&mut args),
    };
    let result = raised.unwrap_or(Errno::ENOSYS.as_negative());
    if forks {
        linux_process::forget_fork_registers(strand);
    }
    // Only `exit` and `exit_group` record an exit (the common path skips
    // the map). Taken out of the map first: the lock must not be held while
    // the thread ends.
    if number == syscall::EXIT || number == syscall::EXIT_GROUP {
        match linux_process::take_exit(strand) {
            Some((status, true)) => linux_process::threads::exit_group(status),
            Some((status, false)) => linux_process::threads::exit_thread(status),
            None => {}
        }
    }
    if number == syscall::EXECVE && result == 0 {
        if let Some((entry, stack)) = linux_process::take_exec(strand) {
            if frame.start_program(entry, stack).is_err() {
                // The loader only places entries in the user half.
                linux_process::threads::killed(linux_abi::signal::SIGSEGV);
            }
            // The new program starts with every register zero.
            return;
        }
    }
    // Another thread stopped the process: this one waits too.
    ::process::wait_while_stopped();
    if let Some(signal) = ::process::pending_kill() {
        linux_process::threads::killed(signal);
    }
    frame.set_result(result as u64);
    if syscalls.tracers.load(Ordering::Relaxed) != 0 {
        let mut done = (result as u64, number, a0, a1, a2, a3, a4, a5);
        let _ = syscalls.done.raise(&mut done);
    }
    // Signals to deliver, and `SIGPIPE` for a broken pipe: one load
    // (and one compare) when there are none.
    if result == Errno::EPIPE.as_negative() || linux::signals_may_be_pending() {
        if let Some(signal) = linux_process::signals::after_syscall(frame, number, result) {
            linux_process::threads::killed(signal);
        }
    }
}

/// Makes the kernel's table the event's *default* handler instead of its
/// intrinsic one: a personality installed on the event answers its
/// processes' calls (falling back on the kernel's table itself), and the table
/// runs alone only for a process no personality claims.
pub fn make_core_table_the_default() {
    let Some(syscalls) = SYSCALLS.get() else {
        return;
    };
    let event = &syscalls.event;
    if let Err(error) = event
        .set_default(
            &syscalls._authority,
            Some(dispatch::Handler::new(syscalls.core_table).named("kernel table")),
        )
        .and_then(|()| event.remove(Principal::KERNEL, dispatch::BindingId::INTRINSIC))
    {
        log::error!("MachineTrap.Syscall: the kernel table could not become the default: {error}");
    }
}
