//! The machine on the host: fakes a test controls. Each test thread has
//! its own (cargo runs tests on several threads at once), so tests do not
//! see each other's memory, clock or waits; a test starts with [`reset`].
//!
//! - **User memory**: nothing is mapped until the test maps pages
//!   ([`map`], [`map_read_only`]) and fills them ([`poke`]). An address
//!   outside them, in a page made to fault again ([`unmap`]), above the
//!   user half, or a range that wraps is [`BadAddress`], so every
//!   `EFAULT` path can be reached with a pointer into a chosen page.
//! - **Clock**: starts at one second and moves only when the test sets it
//!   ([`set_uptime_ns`]) or a thread blocks with a deadline: the block
//!   jumps the clock to the deadline, so a timeout expires at once and no
//!   test sleeps.
//! - **Blocking**: the test thread is the only thread, so
//!   [`Blocking::yield_to_ready`] finds nobody ready. A block returns at
//!   once if a wake came since [`Blocking::prepare_to_wait`]; otherwise it
//!   runs the test's action (what another thread would do meanwhile:
//!   write to the pipe, post a signal), the one for the next block only
//!   ([`once_blocked`]) or the one for every block ([`while_blocked`]),
//!   and returns as after a wake-up; with no action it jumps to its
//!   deadline. With neither, nothing could ever end the wait: the block
//!   panics, so the test fails instead of hanging (so does a wait that
//!   blocks [`MAX_BLOCKS`] times). Every block is recorded ([`blocks`]).

use alloc::{boxed::Box, collections::BTreeMap, collections::BTreeSet, vec::Vec};
use core::{
    cell::RefCell,
    sync::atomic::{AtomicU64, Ordering},
};
use std::thread_local;

use hal::paging::{PAGE_SIZE, USER_END};

use super::{BadAddress, Blocking, Clock, UserMemory};

/// Blocks one test may make: more means a wait that its action never
/// ends.
pub const MAX_BLOCKS: usize = 100_000;

/// Where the fake clock starts: not at zero, so that "no time yet" and
/// "the start" differ.
const START_NS: u64 = 1_000_000_000;

/// One mapped user page.
struct Page {
    bytes: Box<[u8; PAGE_SIZE as usize]>,
    is_writable: bool,
}

/// Everything one test thread's fake machine holds.
struct FakeState {
    /// Mapped user pages by page number.
    pages: BTreeMap<u64, Page>,
    uptime_ns: u64,
    /// The action the next block runs instead of waiting.
    once_blocked: Option<Box<dyn FnOnce()>>,
    /// The action every block runs instead of waiting (see the module).
    while_blocked: Option<Box<dyn FnMut()>>,
    /// What each block waited on, and its deadline.
    blocks: Vec<(&'static str, Option<u64>)>,
    /// Whether the calling thread is to stop waiting (a signal to take).
    is_interrupted: bool,
    /// Whether other threads are ready to run (what a yield finds).
    others_ready: bool,
    /// How many times the thread gave the processor to another.
    yields: usize,
}

impl FakeState {
    fn new() -> FakeState {
        FakeState {
            pages: BTreeMap::new(),
            uptime_ns: START_NS,
            once_blocked: None,
            while_blocked: None,
            blocks: Vec::new(),
            is_interrupted: false,
            others_ready: false,
            yields: 0,
        }
    }

    /// The page numbers `[address, address + length)` covers, if the
    /// range lies in the user half (as `hal::user` checks it).
    fn page_numbers(address: u64, length: usize) -> Result<core::ops::Range<u64>, BadAddress> {
        match address.checked_add(length as u64) {
            Some(end) if end <= USER_END => Ok(if length == 0 {
                0..0
            } else {
                address / PAGE_SIZE..(end - 1) / PAGE_SIZE + 1
            }),
            _ => Err(BadAddress),
        }
    }

    /// Checks that every page of the range is mapped (and writable, for a
    /// write), then calls `each` on the pieces in order: the page, the
    /// offset in it, and the offset in the caller's buffer.
    fn each_piece(
        &mut self,
        address: u64,
        length: usize,
        for_write: bool,
        mut each: impl FnMut(&mut Page, usize, core::ops::Range<usize>),
    ) -> Result<(), BadAddress> {
        let pages = Self::page_numbers(address, length)?;
        for number in pages.clone() {
            match self.pages.get(&number) {
                Some(page) if page.is_writable || !for_write => {}
                _ => return Err(BadAddress),
            }
        }
        let mut done = 0;
        for number in pages {
            let at = address + done as u64;
            let offset = (at % PAGE_SIZE) as usize;
            let count = (PAGE_SIZE as usize - offset).min(length - done);
            let page = self.pages.get_mut(&number).ok_or(BadAddress)?;
            each(page, offset, done..done + count);
            done += count;
        }
        Ok(())
    }
}

thread_local! {
    static STATE: RefCell<FakeState> = RefCell::new(FakeState::new());
    static THREAD_ID: u64 = NEXT_THREAD_ID.fetch_add(1, Ordering::Relaxed);
}

/// Fake thread ids, one per test thread, so that a queue shared by tests
/// (a `static`) never wakes the wrong one.
static NEXT_THREAD_ID: AtomicU64 = AtomicU64::new(1);

/// Threads woken since their last [`Blocking::prepare_to_wait`]: shared,
/// since a wake may come through a `static` queue.
static WOKEN: spin::Mutex<BTreeSet<u64>> = spin::Mutex::new(BTreeSet::new());

fn with_state<R>(f: impl FnOnce(&mut FakeState) -> R) -> R {
    STATE.with(|state| f(&mut state.borrow_mut()))
}

/// Makes other threads ready to run (or not): a yield then gives them
/// the processor, and [`yields`] counts it.
pub fn set_others_ready(others_ready: bool) {
    with_state(|state| state.others_ready = others_ready);
}

/// How many times the calling test thread yielded to another.
pub fn yields() -> usize {
    with_state(|state| state.yields)
}

/// Gives the calling test thread a fresh machine: no user memory, the
/// clock at its start, no blocks recorded, not interrupted.
pub fn reset() {
    with_state(|state| *state = FakeState::new());
    WOKEN.lock().remove(&FakeMachine::current_thread());
}

fn map_pages(address: u64, length: usize, is_writable: bool) {
    let pages = FakeState::page_numbers(address, length).expect("a range in the user half");
    with_state(|state| {
        for number in pages {
            state
                .pages
                .entry(number)
                .or_insert_with(|| Page {
                    bytes: Box::new([0; PAGE_SIZE as usize]),
                    is_writable,
                })
                .is_writable = is_writable;
        }
    });
}

/// Maps the pages covering `[address, address + length)` readable and
/// writable (new pages are zero; mapped ones keep their bytes).
pub fn map(address: u64, length: usize) {
    map_pages(address, length, true);
}

/// Maps the pages covering `[address, address + length)` read-only: a
/// system call's write to them is `EFAULT`.
pub fn map_read_only(address: u64, length: usize) {
    map_pages(address, length, false);
}

/// Unmaps the pages covering `[address, address + length)`: every copy
/// touching them faults.
pub fn unmap(address: u64, length: usize) {
    let pages = FakeState::page_numbers(address, length).expect("a range in the user half");
    with_state(|state| {
        for number in pages {
            state.pages.remove(&number);
        }
    });
}

/// Writes `bytes` at `address` as the program would (read-only pages
/// too); panics if a page is not mapped.
pub fn poke(address: u64, bytes: &[u8]) {
    with_state(|state| {
        state.each_piece(address, bytes.len(), false, |page, offset, range| {
            let count = range.len();
            page.bytes[offset..offset + count].copy_from_slice(&bytes[range]);
        })
    })
    .expect("poke into mapped pages");
}

/// The `length` bytes at `address`; panics if a page is not mapped.
pub fn peek(address: u64, length: usize) -> Vec<u8> {
    let mut bytes = alloc::vec![0; length];
    with_state(|state| {
        state.each_piece(address, length, false, |page, offset, range| {
            let count = range.len();
            bytes[range].copy_from_slice(&page.bytes[offset..offset + count]);
        })
    })
    .expect("peek at mapped pages");
    bytes
}

/// The fake wall clock's offset from the uptime: boot at 2026-01-01
/// 00:00:00 UTC.
pub const FAKE_EPOCH_OFFSET_NS: u64 = 1_767_225_600 * 1_000_000_000;

/// Sets the fake clock's uptime.
pub fn set_uptime_ns(uptime_ns: u64) {
    with_state(|state| state.uptime_ns = uptime_ns);
}

/// Makes every block of the calling test thread run `action` instead of
/// waiting (then return, as after a wake-up), until [`reset`].
pub fn while_blocked(action: impl FnMut() + 'static) {
    with_state(|state| state.while_blocked = Some(Box::new(action)));
}

/// Makes the next block of the calling test thread run `action` instead
/// of waiting (then return, as after a wake-up); later blocks wait as
/// before.
pub fn once_blocked(action: impl FnOnce() + 'static) {
    with_state(|state| state.once_blocked = Some(Box::new(action)));
}

/// What the calling test thread's blocks waited on, with their deadlines,
/// oldest first.
pub fn blocks() -> Vec<(&'static str, Option<u64>)> {
    with_state(|state| state.blocks.clone())
}

/// Says whether the calling test thread is interrupted: what the kernel's
/// check would say (a signal to take, a kill). Install it with
/// `crate::set_interrupted_check`.
pub fn is_interrupted() -> bool {
    with_state(|state| state.is_interrupted)
}

/// Makes the calling test thread interrupted (or not): its waits end
/// with `EINTR` (with [`is_interrupted`] installed).
pub fn set_interrupted(is_interrupted: bool) {
    with_state(|state| state.is_interrupted = is_interrupted);
}

/// The machine on the host: the fakes above.
pub struct FakeMachine;

impl FakeMachine {
    /// The fake clock's uptime (what [`Clock::uptime_ns`] says).
    pub fn now() -> u64 {
        <FakeMachine as Clock>::uptime_ns()
    }
}

/// A fake wait queue: the ids of the threads registered on it.
#[derive(Default)]
pub struct FakeWaitQueue {
    waiters: spin::Mutex<Vec<u64>>,
}

impl FakeWaitQueue {
    /// A queue nobody waits on.
    pub const fn new() -> FakeWaitQueue {
        FakeWaitQueue {
            waiters: spin::Mutex::new(Vec::new()),
        }
    }

    /// Whether no thread is registered.
    pub fn is_empty(&self) -> bool {
        self.waiters.lock().is_empty()
    }

    /// Wakes every registered thread (the name the kernel's queue has).
    pub fn wake_all(&self) {
        FakeMachine::wake_all(self);
    }
}

impl UserMemory for FakeMachine {
    fn read(address: u64, out: &mut [u8]) -> Result<(), BadAddress> {
        with_state(|state| {
            state.each_piece(address, out.len(), false, |page, offset, range| {
                let count = range.len();
                out[range].copy_from_slice(&page.bytes[offset..offset + count]);
            })
        })
    }

    fn write(address: u64, bytes: &[u8]) -> Result<(), BadAddress> {
        with_state(|state| {
            state.each_piece(address, bytes.len(), true, |page, offset, range| {
                let count = range.len();
                page.bytes[offset..offset + count].copy_from_slice(&bytes[range]);
            })
        })
    }
}

impl Clock for FakeMachine {
    fn uptime_ns() -> u64 {
        with_state(|state| state.uptime_ns)
    }

    fn epoch_offset_ns() -> u64 {
        FAKE_EPOCH_OFFSET_NS
    }
}

impl Blocking for FakeMachine {
    type WaitQueue = FakeWaitQueue;

    fn current_thread() -> u64 {
        THREAD_ID.with(|id| *id)
    }

    fn register(queue: &FakeWaitQueue, thread: u64) {
        queue.waiters.lock().push(thread);
    }

    fn unregister(queue: &FakeWaitQueue, thread: u64) {
        let mut waiters = queue.waiters.lock();
        if let Some(at) = waiters.iter().position(|&waiter| waiter == thread) {
            waiters.swap_remove(at);
        }
    }

    fn wake_all(queue: &FakeWaitQueue) {
        let waiters = queue.waiters.lock().clone();
        WOKEN.lock().extend(waiters);
    }

    fn yield_to_ready() -> bool {
        with_state(|state| {
            state.yields += usize::from(state.others_ready);
            state.others_ready
        })
    }

    fn prepare_to_wait() {
        WOKEN.lock().remove(&Self::current_thread());
    }

    fn block_prepared(waiting_on: &'static str, deadline: Option<u64>) {
        let blocks = with_state(|state| {
            state.blocks.push((waiting_on, deadline));
            state.blocks.len()
        });
        assert!(
            blocks <= MAX_BLOCKS,
            "a wait on {waiting_on} blocked {blocks} times: its action never ends it"
        );
        if WOKEN.lock().remove(&Self::current_thread()) {
            return;
        }
        if let Some(action) = with_state(|state| state.once_blocked.take()) {
            action();
            return;
        }
        // Taken out while it runs: the action may use the fake machine.
        if let Some(mut action) = with_state(|state| state.while_blocked.take()) {
            action();
            with_state(|state| {
                state.while_blocked.get_or_insert(action);
            });
            return;
        }
        match deadline {
            Some(deadline) => with_state(|state| state.uptime_ns = state.uptime_ns.max(deadline)),
            None => panic!("a wait on {waiting_on} with no deadline that nothing would end"),
        }
    }
}
