//! Kernel thread contexts, their stacks, and the context switch.
//!
//! A [`Context`] is the saved stack pointer of a suspended kernel thread plus
//! the stack it owns. Switching pushes the callee-saved registers and the
//! flags on the current stack, stores the stack pointer in the outgoing
//! context and resumes the incoming one (System V ABI: everything else is
//! caller-saved, so this is all a voluntary switch must keep; a preempted
//! thread's other registers are already in its trap frame).
//!
//! Lifetimes are enforced here rather than trusted to the scheduler: the
//! running context is held in [`CURRENT`]; a suspended one is held by the
//! `switch_to` frame on its own stack; a finished one is parked in
//! [`FINISHED`] until the next thread runs, which drops it (and frees its
//! stack) once nothing executes on it any more.

use alloc::{boxed::Box, sync::Arc, vec::Vec};
use core::{
    arch::global_asm,
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use crate::{
    address_space::{self, AddressSpace},
    memory::{self, MapError, PAGE_SIZE, STACKS_BASE},
    sync::IrqMutex,
};

/// Virtual space reserved per kernel stack (the stack plus its guard page).
pub(crate) const STACK_SLOT_BYTES: u64 = 1 << 20;

/// Stack slot allocator: slots freed by dropped stacks, and the next unused.
static STACK_SLOTS: IrqMutex<(Vec<u64>, u64)> = IrqMutex::new((Vec::new(), 0));

/// The stack slots whose stack's bottom [`stack_room`] knows: the first
/// this many (slots are reused, so this is the most threads alive at once
/// before one's stack goes unknown).
const KNOWN_STACK_SLOTS: usize = 1024;

/// The lowest mapped address of the stack in each known slot, by slot
/// index; 0 while the slot holds none.
static STACK_BOTTOMS: [AtomicU64; KNOWN_STACK_SLOTS] =
    [const { AtomicU64::new(0) }; KNOWN_STACK_SLOTS];

/// The [`STACK_BOTTOMS`] entry of the slot starting at `slot`.
fn known_bottom(slot: u64) -> Option<&'static AtomicU64> {
    STACK_BOTTOMS.get(((slot - STACKS_BASE) / STACK_SLOT_BYTES) as usize)
}

/// Bytes of kernel stack mapped below `address` (an address on the
/// running thread's stack, such as a local's): how deep code running
/// there may still go before the guard page. `None` when `address` is
/// not on a kernel thread's stack whose bounds are known (the boot
/// stack, or a slot past the known ones). For code that decides whether
/// to run something of unbounded depth (an extension's handler raised
/// from inside another's) rather than fault on the guard page.
pub fn stack_room(address: u64) -> Option<u64> {
    if address <= STACKS_BASE {
        return None;
    }
    // A stack's top is its slot's end: the slot of the byte below.
    let slot = STACKS_BASE + (address - 1 - STACKS_BASE) / STACK_SLOT_BYTES * STACK_SLOT_BYTES;
    let bottom = known_bottom(slot)?.load(Ordering::Acquire);
    (bottom != 0 && address >= bottom).then(|| address - bottom)
}

/// Bytes of the running thread's kernel stack ever used: from its top
/// down to the deepest word written with anything but zero (a stack
/// starts on fresh zeroed pages, [`KernelStack::new`]), so at most the
/// zero words written at the deepest point go uncounted. `None` when the
/// running stack's bounds are unknown (as for [`stack_room`]). For
/// measuring how deep kernel code goes: the stack the extension
/// compiler needs (`wasm_runtime::COMPILE_STACK_BYTES`) is set from it.
pub fn deepest_stack_use() -> Option<u64> {
    let marker = 0u8;
    let here = core::ptr::addr_of!(marker) as u64;
    let bottom = here - stack_room(here)?;
    let top = STACKS_BASE
        + (here - 1 - STACKS_BASE) / STACK_SLOT_BYTES * STACK_SLOT_BYTES
        + STACK_SLOT_BYTES;
    let mut at = bottom;
    while at < here {
        // SAFETY: `at` is 8-byte aligned (the bottom is a page's start)
        // and between the bottom of the running thread's own stack and
        // this function's `marker`: mapped for as long as the thread runs
        // (a stack is freed only once nothing runs on it). What lies
        // there is stack below the live frames, or this function's own
        // slots, none of them borrowed now; the word is copied out as a
        // plain integer (any bits are one), volatile, since an interrupt
        // may use the stack meanwhile, and nothing is written.
        if unsafe { core::ptr::read_volatile(at as *const u64) } != 0 {
            break;
        }
        at += 8;
    }
    Some(top - at)
}

/// A kernel stack: mapped pages with an unmapped guard page below them, so an
/// overflow faults (and becomes a double fault on the IST stack) instead of
/// corrupting memory.
#[derive(Debug)]
pub struct KernelStack {
    slot: u64,
    pages: u64,
}

impl KernelStack {
    /// Allocates a stack of at least `bytes` (at most 1 MiB minus a page).
    pub fn new(bytes: u64) -> Result<Self, MapError> {
        let pages = bytes
            .div_ceil(PAGE_SIZE)
            .clamp(1, STACK_SLOT_BYTES / PAGE_SIZE - 1);
        let slot = {
            let mut slots = STACK_SLOTS.lock();
            match slots.0.pop() {
                Some(slot) => slot,
                None => {
                    let slot = STACKS_BASE + slots.1 * STACK_SLOT_BYTES;
                    slots.1 += 1;
                    slot
                }
            }
        };
        let stack = Self { slot, pages };
        // Leave the lowest page of the slot unmapped: the guard page.
        memory::map_internal(stack.bottom(), pages)?;
        if let Some(bottom) = known_bottom(slot) {
            bottom.store(stack.bottom(), Ordering::Release);
        }
        Ok(stack)
    }

    /// Lowest mapped address.
    pub fn bottom(&self) -> u64 {
        self.top() - self.pages * PAGE_SIZE
    }

    /// One past the highest address (16-byte aligned).
    pub fn top(&self) -> u64 {
        self.slot + STACK_SLOT_BYTES
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        if let Some(bottom) = known_bottom(self.slot) {
            bottom.store(0, Ordering::Release);
        }
        memory::unmap_internal(self.bottom(), self.pages);
        STACK_SLOTS.lock().0.push(self.slot);
    }
}

/// The saved state of a kernel thread that is not running.
pub struct Context {
    /// Stack pointer saved by the last switch away (written only by the
    /// switch assembly, with interrupts disabled).
    saved_rsp: UnsafeCell<u64>,
    /// The thread's entry, taken when it first runs.
    entry: IrqMutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Whether the thread ended with [`exit_to`]; it must never run again.
    is_finished: AtomicBool,
    /// The stack, or `None` for the boot thread (which runs on the boot stack).
    stack: Option<KernelStack>,
    /// The user address space the thread runs in, if it is a user thread
    /// (`None`: the kernel's page tables).
    address_space: IrqMutex<Option<Arc<AddressSpace>>>,
    /// While the thread runs a user program (`user::run`): the kernel stack
    /// pointer `user::end` resumes at; 0 otherwise. Written only by the
    /// thread itself.
    user_resume_rsp: UnsafeCell<u64>,
    /// While the thread runs a user program: the top of the part of its
    /// kernel stack that entries from user mode use, below `user::run`'s
    /// frame (they must not overwrite it); 0 otherwise.
    user_entry_top: AtomicU64,
    /// The thread's FS base (user thread-local storage, set by the program
    /// through `arch_prctl`); loaded at every switch to the thread.
    fs_base: AtomicU64,
    /// The faulting address (CR2) of the thread's last page fault in user
    /// mode, read at the trap's entry: its handler runs with interrupts on
    /// and may be preempted, and another thread's fault would change CR2.
    user_fault_address: AtomicU64,
    /// The thread's x87/SSE state (FXSAVE image), saved when it is switched
    /// away from and restored when it is switched to. The kernel is built
    /// without SSE, so the registers hold user state only.
    fpu: Box<FpuState>,
    /// Identifier, for diagnostics.
    id: u64,
}

// SAFETY: `saved_rsp` is only accessed by the switch code with interrupts
// disabled on the single CPU, so never concurrently; `user_resume_rsp` only
// by the thread the context belongs to.
unsafe impl Sync for Context {}
// SAFETY: as above; the other fields are Send.
unsafe impl Send for Context {}

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Room for a thread's FPU state: an FXSAVE image (512 bytes) or an XSAVE
/// area for x87, SSE and AVX (832 bytes on every CPU that has AVX).
const FPU_AREA_BYTES: usize = 1024;

/// Whether the context switch uses XSAVE (set once by [`enable_xsave`],
/// before any user thread runs); FXSAVE otherwise.
static USE_XSAVE: AtomicBool = AtomicBool::new(false);

/// Makes the context switch save and restore with XSAVE/XRSTOR (the
/// features XCR0 enables: x87, SSE, AVX), if an area of `area_bytes` fits
/// in each thread's room; whether it does.
pub(crate) fn enable_xsave(area_bytes: u64) -> bool {
    if area_bytes as usize > FPU_AREA_BYTES {
        return false;
    }
    USE_XSAVE.store(true, Ordering::Release);
    true
}

/// Whether the context switch keeps AVX state (XSAVE is in use).
pub fn saves_extended_state() -> bool {
    USE_XSAVE.load(Ordering::Acquire)
}

/// A thread's FPU state: the FXSAVE image (Intel SDM vol. 1, 10.5.1), which
/// is also the legacy region of an XSAVE area, followed by the XSAVE
/// header and extended state; 64-byte aligned, as XSAVE requires.
#[repr(C, align(64))]
struct FpuState(UnsafeCell<[u8; FPU_AREA_BYTES]>);

impl FpuState {
    /// The state after `fninit` with SSE exceptions masked: x87 control
    /// word 0x37f, MXCSR 0x1f80; a zero XSAVE header puts every extended
    /// component in its initial state.
    fn initial() -> Box<Self> {
        let mut image = [0u8; FPU_AREA_BYTES];
        image[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        image[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        Box::new(FpuState(UnsafeCell::new(image)))
    }
}

/// Saves the CPU's FPU/SSE/AVX registers into `into` and loads `from`'s.
///
/// Interrupts must be disabled (the areas are written only here).
fn switch_fpu(into: &FpuState, from: &FpuState) {
    if USE_XSAVE.load(Ordering::Relaxed) {
        // Both areas are 1024 bytes, at least the XSAVE size for what XCR0
        // enables (checked by `enable_xsave`); EDX:EAX all ones asks for
        // every component XCR0 enables.
        // SAFETY: 64-byte-aligned areas of live contexts, holding images
        // XSAVE wrote or the initial one (zero header); interrupts are off.
        unsafe {
            core::arch::asm!(
                "xsave64 [{into}]",
                "xrstor64 [{from}]",
                into = in(reg) into.0.get(),
                from = in(reg) from.0.get(),
                in("eax") u32::MAX,
                in("edx") u32::MAX,
                options(nostack, preserves_flags),
            );
        }
        return;
    }
    // SAFETY: 16-byte-aligned areas of at least 512 bytes of live contexts,
    // holding images FXSAVE wrote or the initial one; interrupts are off, so
    // nothing else touches them.
    unsafe {
        core::arch::asm!(
            "fxsave64 [{into}]",
            "fxrstor64 [{from}]",
            into = in(reg) into.0.get(),
            from = in(reg) from.0.get(),
            options(nostack, preserves_flags),
        );
    }
}

impl Context {
    /// A context for a new thread that will run `entry` on `stack`. `entry`
    /// must not return (end the thread with [`exit_to`]).
    pub fn new(stack: KernelStack, entry: Box<dyn FnOnce() + Send>) -> Arc<Self> {
        let top = stack.top();
        let context = Arc::new(Self {
            saved_rsp: UnsafeCell::new(0),
            entry: IrqMutex::new(Some(entry)),
            is_finished: AtomicBool::new(false),
            stack: Some(stack),
            address_space: IrqMutex::new(None),
            user_resume_rsp: UnsafeCell::new(0),
            user_entry_top: AtomicU64::new(0),
            fs_base: AtomicU64::new(0),
            user_fault_address: AtomicU64::new(0),
            fpu: FpuState::initial(),
            id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed),
        });
        // Initial frame, as `hal_switch_stacks` pops it: rflags (interrupts
        // off), r15, r14, r13, r12 (the context pointer), rbx, rbp, and the
        // return address. After the final `ret`, rsp == top, 16-byte aligned.
        let frame = [
            0x2u64,
            0,
            0,
            0,
            Arc::as_ptr(&context) as u64,
            0,
            0,
            hal_thread_trampoline as *const () as u64,
        ];
        let rsp = top - (frame.len() as u64) * 8;
        for (index, word) in frame.iter().enumerate() {
            // SAFETY: the words lie in the top 64 bytes of the freshly mapped
            // stack, which nothing else uses yet.
            unsafe { core::ptr::write((rsp + index as u64 * 8) as *mut u64, *word) };
        }
        // SAFETY: not yet shared with the switch code.
        unsafe { *context.saved_rsp.get() = rsp };
        context
    }

    /// Identifier, for diagnostics.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The stack, if this context owns one.
    pub fn stack(&self) -> Option<&KernelStack> {
        self.stack.as_ref()
    }
}

/// The running context (`None` before [`adopt_boot_thread`]).
static CURRENT: IrqMutex<Option<Arc<Context>>> = IrqMutex::new(None);
/// A context that ended with [`exit_to`], dropped by the next thread to run.
static FINISHED: IrqMutex<Option<Arc<Context>>> = IrqMutex::new(None);

/// Makes the code now running (on the boot stack) a context, so that it can
/// switch away and be resumed. Call once.
pub fn adopt_boot_thread() -> Arc<Context> {
    let context = Arc::new(Context {
        saved_rsp: UnsafeCell::new(0),
        entry: IrqMutex::new(None),
        is_finished: AtomicBool::new(false),
        stack: None,
        address_space: IrqMutex::new(None),
        user_resume_rsp: UnsafeCell::new(0),
        user_entry_top: AtomicU64::new(0),
        fs_base: AtomicU64::new(0),
        user_fault_address: AtomicU64::new(0),
        fpu: FpuState::initial(),
        id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed),
    });
    let mut current = CURRENT.lock();
    assert!(current.is_none(), "the boot thread was already adopted");
    *current = Some(context.clone());
    context
}

global_asm!(
    r#"
    .section .text.hal_switch_stacks, "ax"
    .global hal_switch_stacks
hal_switch_stacks:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    pushfq
    mov [rdi], rsp
    mov rsp, rsi
    popfq
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

    .global hal_thread_trampoline
hal_thread_trampoline:
    mov rdi, r12
    call {start}
    ud2
"#,
    start = sym hal_thread_start,
);

extern "C" {
    /// Saves callee-saved registers and flags, stores rsp at `save_rsp`,
    /// loads `new_rsp` and restores the registers saved there.
    fn hal_switch_stacks(save_rsp: *mut u64, new_rsp: u64);
    fn hal_thread_trampoline();
}

/// First code of every new thread (on its own stack, interrupts disabled).
extern "C" fn hal_thread_start(context: *const Context) -> ! {
    finish_switch();
    // SAFETY: `context` is the pointer `Context::new` stored in r12; CURRENT
    // holds an Arc to it while this thread runs.
    let context = unsafe { &*context };
    let entry = context.entry.lock().take().expect("a thread started twice");
    crate::cpu::enable_interrupts();
    // The entry returns here, so its box (and whatever it captured) is
    // freed; then the scheduler's hook ends the thread with nothing of it
    // left on this stack. (A thread that ended inside its boxed entry leaked
    // the box: one allocation per thread whose closure captured anything.)
    entry();
    let on_return = THREAD_RETURN.load(Ordering::Acquire);
    if on_return != 0 {
        // SAFETY: non-zero values are only ever stored from a `fn() -> !`.
        let on_return = unsafe { core::mem::transmute::<usize, fn() -> !>(on_return) };
        on_return();
    }
    panic!("kernel thread {} returned from its entry", context.id);
}

/// What runs when a thread's entry returns (the scheduler's exit), as a
/// `fn() -> !` address; 0 = none.
static THREAD_RETURN: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Sets what runs when a thread's entry returns: it must end the thread.
pub fn set_thread_return(on_return: fn() -> !) {
    THREAD_RETURN.store(on_return as usize, Ordering::Release);
}

/// Completes a switch on the incoming side: drops a finished context.
fn finish_switch() {
    let finished = FINISHED.lock().take();
    drop(finished);
}

/// Makes the CPU ready to run `to`: its address space in CR3, and its
/// kernel stack as the one traps and system calls from user mode land on.
fn prepare_to_run(to: &Context) {
    let root = to
        .address_space
        .lock()
        .as_ref()
        .map_or_else(memory::kernel_root, |space| space.root());
    address_space::activate(root);
    x86_64::registers::model_specific::FsBase::write(x86_64::VirtAddr::new(
        to.fs_base.load(Ordering::Relaxed),
    ));
    if let Some(stack) = &to.stack {
        let entry_top = match to.user_entry_top.load(Ordering::Relaxed) {
            0 => stack.top(),
            top => top,
        };
        crate::gdt::set_kernel_stack(entry_top);
        crate::user::set_syscall_stack(entry_top);
    }
}

/// Runs the current thread in `space` (a user address space) or, with
/// `None`, in the kernel's page tables alone. The thread holds the address
/// space until it ends or sets another.
pub fn set_address_space(space: Option<Arc<AddressSpace>>) {
    crate::cpu::without_interrupts(|| {
        let current = CURRENT.lock().clone().expect("no current context");
        let previous = core::mem::replace(&mut *current.address_space.lock(), space);
        prepare_to_run(&current);
        // Dropped after CR3 moved away from it.
        drop(previous);
    });
}

/// Runs `f` on the running thread's user address space, if it has one
/// (e.g. a page-fault handler mapping the page a program touched).
pub fn with_current_address_space<R>(f: impl FnOnce(&AddressSpace) -> R) -> Option<R> {
    let space = CURRENT
        .lock()
        .as_ref()
        .and_then(|context| context.address_space.lock().clone())?;
    Some(f(&space))
}

/// The running thread's slot for `user::run`'s resume point, if it has a
/// kernel stack of its own (every thread but the boot thread), which traps
/// from user mode can land on.
pub(crate) fn current_user_resume_slot() -> Option<*mut u64> {
    let current = CURRENT.lock();
    let context = current.as_ref()?;
    context.stack.as_ref()?;
    // The Context lives as long as the thread (CURRENT holds it), and only
    // this thread touches the slot.
    Some(context.user_resume_rsp.get())
}

/// The resume point of the running thread's `user::run`, if it is in one.
pub(crate) fn current_user_resume_rsp() -> Option<u64> {
    let current = CURRENT.lock();
    let context = current.as_ref()?;
    // SAFETY: only the running thread reads or writes its own slot.
    let rsp = unsafe { *context.user_resume_rsp.get() };
    (rsp != 0).then_some(rsp)
}

/// Marks the running thread as in `user::run`, with entries from user mode
/// using its kernel stack below `entry_top` (interrupts disabled).
pub(crate) fn set_user_entry_top(entry_top: u64) {
    if let Some(context) = CURRENT.lock().as_ref() {
        context.user_entry_top.store(entry_top, Ordering::Relaxed);
        crate::gdt::set_kernel_stack(entry_top);
        crate::user::set_syscall_stack(entry_top);
    }
}

/// Sets the running thread's FS base (a user-half address, checked by the
/// caller) and loads it now.
pub(crate) fn set_current_fs_base(value: u64) {
    crate::cpu::without_interrupts(|| {
        if let Some(context) = CURRENT.lock().as_ref() {
            context.fs_base.store(value, Ordering::Relaxed);
            x86_64::registers::model_specific::FsBase::write(x86_64::VirtAddr::new(value));
        }
    });
}

/// Records the running thread's user page-fault address (trap entry,
/// interrupts off).
pub(crate) fn set_user_fault_address(address: u64) {
    if let Some(context) = CURRENT.lock().as_ref() {
        context.user_fault_address.store(address, Ordering::Relaxed);
    }
}

/// The running thread's last user page-fault address.
pub(crate) fn user_fault_address() -> u64 {
    CURRENT.lock().as_ref().map_or(0, |context| {
        context.user_fault_address.load(Ordering::Relaxed)
    })
}

/// The running thread's FS base.
pub(crate) fn current_fs_base() -> u64 {
    CURRENT
        .lock()
        .as_ref()
        .map_or(0, |context| context.fs_base.load(Ordering::Relaxed))
}

/// Marks the running thread as out of `user::run`.
pub(crate) fn clear_user_resume_slot() {
    if let Some(context) = CURRENT.lock().as_ref() {
        // SAFETY: only the running thread reads or writes its own slot.
        unsafe { *context.user_resume_rsp.get() = 0 };
        context.user_entry_top.store(0, Ordering::Relaxed);
    }
}

/// The stack pointer to resume `to` at.
fn resume_rsp(to: &Context) -> u64 {
    assert!(
        !to.is_finished.load(Ordering::Relaxed),
        "switch to finished context {}",
        to.id
    );
    // SAFETY: interrupts are disabled (checked by the callers), so the switch
    // code is not writing it concurrently.
    unsafe { *to.saved_rsp.get() }
}

/// Switches stacks.
///
/// # Safety
/// Interrupts must be disabled; `save_rsp` must point into a context that
/// stays alive until the switch back; `new_rsp` must come from
/// [`resume_rsp`] of a context that CURRENT now holds: either fresh (its
/// initial frame built by `Context::new`) or suspended by this function.
unsafe fn switch_stacks(save_rsp: *mut u64, new_rsp: u64) {
    // SAFETY: guaranteed by the caller, see above.
    unsafe { hal_switch_stacks(save_rsp, new_rsp) };
}

/// Context switches made while the processor held an interrupt-disabling
/// lock (a bug: the next thread inherits interrupts off, and the lock's
/// holder is not running to release it). The lockup watchdog's reports
/// show the count.
static SWITCHES_HOLDING_LOCKS: core::sync::atomic::AtomicU64 =
    core::sync::atomic::AtomicU64::new(0);

/// Context switches made while holding an interrupt-disabling lock.
pub fn switches_holding_locks() -> u64 {
    SWITCHES_HOLDING_LOCKS.load(Ordering::Relaxed)
}

/// Suspends the running context and resumes `to`. Returns when some thread
/// switches back. Interrupts must be disabled.
pub fn switch_to(to: Arc<Context>) {
    assert!(
        !crate::cpu::are_interrupts_enabled(),
        "switch_to with interrupts enabled"
    );
    if crate::sync::locks_held() != 0 {
        SWITCHES_HOLDING_LOCKS.fetch_add(1, Ordering::Relaxed);
    }
    let from = {
        let mut current = CURRENT.lock();
        let from = current
            .replace(to.clone())
            .expect("switch_to before adopt_boot_thread");
        if Arc::ptr_eq(&from, &to) {
            return;
        }
        from
    };
    let new_rsp = resume_rsp(&to);
    prepare_to_run(&to);
    switch_fpu(&from.fpu, &to.fpu);
    drop(to); // CURRENT holds it now.
              // SAFETY: interrupts are off; `from` stays alive in this frame while the
              // thread is suspended; `new_rsp` belongs to the context CURRENT holds.
    unsafe { switch_stacks(from.saved_rsp.get(), new_rsp) };
    finish_switch();
}

/// Ends the running context for good and resumes `to`; the ended context
/// (and its stack) is freed by the next thread to run. Interrupts must be
/// disabled.
pub fn exit_to(to: Arc<Context>) -> ! {
    assert!(
        !crate::cpu::are_interrupts_enabled(),
        "exit_to with interrupts enabled"
    );
    let from = CURRENT
        .lock()
        .replace(to.clone())
        .expect("exit_to before adopt_boot_thread");
    assert!(!Arc::ptr_eq(&from, &to), "a thread cannot exit to itself");
    from.is_finished.store(true, Ordering::Relaxed);
    let save_rsp = from.saved_rsp.get();
    // The ending thread's registers are not needed: saved into its own
    // area, which goes with it.
    switch_fpu(&from.fpu, &to.fpu);
    // Park `from` so the next thread drops it once we are off its stack.
    let previous = FINISHED.lock().replace(from);
    assert!(previous.is_none(), "two finished contexts pending");
    let new_rsp = resume_rsp(&to);
    prepare_to_run(&to);
    drop(to); // CURRENT holds it now; this frame is never resumed.
              // SAFETY: interrupts are off; FINISHED keeps `from` alive until the next
              // thread runs, after the switch has written `save_rsp`; `new_rsp`
              // belongs to the context CURRENT holds.
    unsafe { switch_stacks(save_rsp, new_rsp) };
    unreachable!("a finished context was resumed");
}

/// The running context's identifier, if any.
pub fn current_id() -> Option<u64> {
    CURRENT.lock().as_ref().map(|context| context.id)
}
