//! The entry into the native engine's generated code, and the callbacks
//! generated code makes back into the runtime: with `hal`, the only crate
//! with `unsafe` (docs/design/0008-native-engine.md, "Entering generated
//! code"; `xtask/src/policy.rs` allows these two and no other).
//!
//! What it does, and nothing else:
//! - lends a *host* (the runtime's value the callbacks reach: an
//!   instance, or what read-only code reaches) to generated code for the
//!   length of one call: its address goes into the context's [`HOST`]
//!   word, the stack limit into [`STACK_LIMIT`], and the code is entered
//!   ([`run`], [`run_held`]; [`run_alone`] for code that reaches no host);
//! - turns the context generated code passes back to a callback into that
//!   host again, and calls the safe procedure the runtime gave for it
//!   ([`Procedure`], whose address for the context's tables is
//!   [`trampoline`]).
//!
//! # The trust it cannot check
//!
//! Its functions are safe to call, but they run machine code: they are
//! sound only for code the native engine's compiler emitted, entered at a
//! function start whose type the runtime checked enterable (integer
//! parameters, at most [`ENTRY_ARGUMENTS`], at most one integer result),
//! on a context laid out as `wasm_runtime::engine::native::vmctx` says
//! whose addresses (linear memory, globals, tables, runtime procedures)
//! are valid for the call, and whose function table and runtime
//! procedure words hold only [`trampoline`]s of the host that context is
//! run with. `hal` cannot tell compiler output from other bytes (hence
//! its `unsafe fn`s); neither can this crate, and no crate can seal a type
//! against safe code of another. So the trust is placed by dependency:
//! its one dependent is the runtime (`wasm-runtime`, feature `native`),
//! which only enters code its compiler produced with a context it filled,
//! and xtask's policy check refuses any other crate that depends on this
//! one.
#![no_std]

extern crate alloc;

use alloc::sync::Arc;

use hal::native_code::{CodeMemory, EntryPoint};
pub use hal::native_code::{ENTRY_ARGUMENTS, REGISTER_ARGUMENTS};

/// Machine stack generated code may use below the entry before its
/// stack-limit check traps. On top of it: at most one frame of
/// `CompileLimits::frame_bytes` (8 KiB), which a function may write before
/// its check runs, and the kernel procedures it calls. Kernel threads that
/// run extensions have 64 KiB (user threads' kernel stacks) or 256 KiB, so
/// 16 + 8 KiB below a raise leaves a procedure and the raise path room
/// above the guard page. (Nested entries, a procedure raising into
/// another extension's native handler, each get a budget of their own:
/// see docs/design/0008-native-engine.md, "What is left".)
pub const STACK_BUDGET_BYTES: u64 = 16 * 1024;

/// Offset in the context of the lowest stack address generated code may
/// use (`u64`), which the entry sets [`STACK_BUDGET_BYTES`] below itself.
pub const STACK_LIMIT: i32 = 96;

/// Offset in the context of the host's address (`u64`), which the entry
/// sets and the callbacks read; generated code never reads it.
pub const HOST: i32 = 104;

/// The word of [`STACK_LIMIT`].
const STACK_LIMIT_WORD: usize = (STACK_LIMIT / 8) as usize;
/// The word of [`HOST`].
const HOST_WORD: usize = (HOST / 8) as usize;

/// A kind of host: what the callbacks of generated code reach through the
/// context's [`HOST`] word. A family over the lifetime of what the host
/// borrows, so that a [`Procedure`] is given the host for the length of
/// the callback only and can keep nothing of it.
pub trait Host {
    /// The host itself, borrowing for `'a`.
    type Of<'a>;
}

/// A host that holds the context it is run with, as a field (not behind a
/// pointer): generated code and the callbacks reach both through the one
/// borrow the entry is lent.
pub trait ContextHost: Host {
    /// The context words (at least [`HOST`] / 8 + 1 of them), inside
    /// `host`'s own bytes.
    fn context<'b>(host: &'b mut Self::Of<'_>) -> &'b mut [u64];
}

/// A runtime procedure generated code calls (a kernel procedure, or
/// `memory.grow`, `memory.copy`, `memory.fill`), as safe Rust on the host
/// the call lent.
pub trait Procedure<H: Host> {
    /// How many arguments after the context it takes (at most
    /// [`ENTRY_ARGUMENTS`]), each passed in 64 bits (System V: in a
    /// register, the sixth and later on the stack).
    const ARGUMENTS: usize;

    /// Runs the procedure on `host` with its `arguments` (exactly
    /// [`Self::ARGUMENTS`] of them): its result, returned in `rax` (a
    /// 32-bit result in the low half).
    fn call(host: &mut H::Of<'_>, arguments: &[u64]) -> u64;
}

/// The address of `P`'s callback for hosts of kind `H`: a function of the
/// System V convention taking the context and `P::ARGUMENTS` 64-bit
/// arguments, which finds the host in the context and calls
/// [`Procedure::call`] on it; what goes into a context's function table
/// or procedure words. Only a context lent a host of kind `H` may hold
/// it (the crate's contract).
pub fn trampoline<H: Host, P: Procedure<H>>() -> u64 {
    const { assert!(P::ARGUMENTS <= ENTRY_ARGUMENTS) };
    match P::ARGUMENTS {
        0 => trampoline_0::<H, P> as *const () as u64,
        1 => trampoline_1::<H, P> as *const () as u64,
        2 => trampoline_2::<H, P> as *const () as u64,
        3 => trampoline_3::<H, P> as *const () as u64,
        4 => trampoline_4::<H, P> as *const () as u64,
        5 => trampoline_5::<H, P> as *const () as u64,
        6 => trampoline_6::<H, P> as *const () as u64,
        7 => trampoline_7::<H, P> as *const () as u64,
        _ => trampoline_8::<H, P> as *const () as u64,
    }
}

/// The host of kind `H` whose context generated code passed back.
///
/// # Safety
///
/// `context` must be a context one of [`run`] or [`run_held`] lent a host
/// of kind `H` to, during that call: its [`HOST`] word then holds the
/// address of that host, which the entry borrowed mutably and uses only
/// through that address, and no other callback is running (generated
/// code is single-threaded and callbacks do not re-enter it). The result
/// is used only until the callback returns.
#[inline(always)]
unsafe fn host_of<'r, 'h, H: Host>(context: *mut u64) -> &'r mut H::Of<'h> {
    // SAFETY: per the function's contract, the HOST word is within the
    // context and holds the address of a live host of kind `H` that
    // nothing else references during this callback.
    unsafe { &mut *(context.add(HOST_WORD).read() as *mut H::Of<'h>) }
}

/// One callback per arity (`trampoline_N` takes the context and `N`
/// arguments), generic over the host and the procedure.
macro_rules! trampolines {
    ($($name:ident($($argument:ident),*);)*) => {
        $(
            /// A callback of generated code: see [`trampoline`].
            extern "sysv64" fn $name<H: Host, P: Procedure<H>>(
                context: *mut u64
                $(, $argument: u64)*
            ) -> u64 {
                // SAFETY: generated code calls this only through a word of
                // a context lent a host of kind `H` (`trampoline`'s
                // contract: the runtime puts it only into the tables of
                // contexts it runs with such a host), passing that context,
                // during the call `run` or `run_held` made; the host is
                // used only within this callback.
                let host = unsafe { host_of::<H>(context) };
                P::call(host, &[$($argument),*])
            }
        )*
    };
}

trampolines! {
    trampoline_0();
    trampoline_1(a);
    trampoline_2(a, b);
    trampoline_3(a, b, c);
    trampoline_4(a, b, c, d);
    trampoline_5(a, b, c, d, e);
    trampoline_6(a, b, c, d, e, f);
    trampoline_7(a, b, c, d, e, f, g);
    trampoline_8(a, b, c, d, e, f, g, h);
}

/// Lends `host` to `call`, which enters generated code with the context
/// it is given: the context's [`HOST`] word is set to the host and its
/// [`STACK_LIMIT`] to [`STACK_BUDGET_BYTES`] below here; from then to the
/// end of `call`, the host is used only through that context (by the
/// callbacks), so no reference aliases it meanwhile.
#[inline(always)]
fn lend<H: ContextHost, R>(host: &mut H::Of<'_>, call: impl FnOnce(*mut u64) -> R) -> R {
    // The stack limit: this frame's address minus the budget (a kernel
    // stack is far above 16 KiB; were it not, the limit would wrap to the
    // top of the address space and every check would trap).
    let marker = 0u8;
    let here = core::ptr::addr_of!(marker) as u64;
    let address = core::ptr::addr_of_mut!(*host) as usize;
    let context = H::context(host);
    context[STACK_LIMIT_WORD] = here.wrapping_sub(STACK_BUDGET_BYTES);
    context[HOST_WORD] = address as u64;
    // Where the context is in the host, so that the pointer generated
    // code gets is derived from the host's own (as its callbacks' are),
    // not from a borrow of the context that theirs would end.
    let start = context.as_ptr() as usize;
    let end = start + core::mem::size_of_val(context);
    assert!(
        start >= address && end <= address + core::mem::size_of::<H::Of<'_>>(),
        "the context is not inside its host"
    );
    let pointer: *mut H::Of<'_> = host;
    let context = pointer
        .cast::<u8>()
        .wrapping_add(start - address)
        .cast::<u64>();
    call(context)
}

/// Runs the function at `offset` of `code` with `host`'s context (filled
/// by the runtime, but for the words [`lend`] sets) and the first `count`
/// of `arguments` (the function's parameter count; up to
/// [`REGISTER_ARGUMENTS`] go in registers only). Code that `uses_floats`
/// runs with the interrupted thread's x87/SSE state kept around it and
/// rounding set as Wasm requires. Its raw result (the trap word of the
/// context tells whether it trapped), or `None` when `offset` is past the
/// end of `code`.
///
/// Sound only under the crate's contract (see the crate's documentation):
/// `code` is the compiler's output and `offset` the start of an
/// enterable function of `count` parameters.
#[inline]
pub fn run<H: ContextHost>(
    code: &CodeMemory,
    offset: usize,
    host: &mut H::Of<'_>,
    arguments: [i64; ENTRY_ARGUMENTS],
    count: usize,
    uses_floats: bool,
) -> Option<i64> {
    lend::<H, _>(host, |context| {
        // SAFETY: (1) `code` holds `Compiler::compile`'s output and
        // `offset` is the start of one of its functions, whose type the
        // runtime checked enterable, taking `count` parameters (the
        // crate's contract); (2) the context is the host's, filled by the
        // runtime from the instance's own memory, globals, table and
        // function addresses, which nothing resizes during the call (the
        // contract), and its runtime procedures and imports are
        // `trampoline`s of this kind of host, lent just now by `lend`; the
        // stack limit leaves `STACK_BUDGET_BYTES` from here.
        let call = || unsafe { enter(code, offset, context, arguments, count) };
        // Code that uses floats changes the x87/SSE registers, which hold
        // the interrupted thread's (a user program's, in a system call):
        // kept around the call, and rounding set as Wasm requires.
        hal::native_code::keeping_fpu_state_if(uses_floats, call)
    })
}

/// Enters the function at `offset` of `code`, taking `count` of
/// `arguments`: through [`CodeMemory::entry_point`] when they all fit in
/// registers.
///
/// # Safety
///
/// As for [`CodeMemory::enter`]; `count` is the function's number of
/// parameters (at most [`ENTRY_ARGUMENTS`]).
#[inline(always)]
unsafe fn enter(
    code: &CodeMemory,
    offset: usize,
    context: *mut u64,
    arguments: [i64; ENTRY_ARGUMENTS],
    count: usize,
) -> Option<i64> {
    if count <= REGISTER_ARGUMENTS {
        let [a, b, c, d, e, ..] = arguments;
        // SAFETY: the caller's conditions, and the function takes `count`
        // parameters, at most `REGISTER_ARGUMENTS`; its code memory is
        // `code`, alive for the call. With `count` a constant (an event's
        // arity, inlined), only its registers are loaded.
        unsafe {
            code.entry_point(offset)
                .map(|function| function.call(context, [a, b, c, d, e], count))
        }
    } else {
        // SAFETY: the caller's conditions.
        unsafe { code.enter(offset, context, arguments) }
    }
}

/// A function's entry point and the code memory it is in, held together:
/// the entry point is found from the memory it keeps alive
/// ([`HeldEntry::new`]), so entering it cannot outlive the code.
pub struct HeldEntry {
    /// Held, never read: the memory `entry` is in.
    _code: Arc<CodeMemory>,
    entry: EntryPoint,
}

impl HeldEntry {
    /// The function at `offset` of `code` (which must hold the compiler's
    /// output, as every code memory of the runtime does); `None` past its
    /// end.
    pub fn new(code: Arc<CodeMemory>, offset: usize) -> Option<HeldEntry> {
        let entry = code.entry_point(offset)?;
        Some(HeldEntry { _code: code, entry })
    }
}

/// Runs `function` with `host`'s context and the first `count` of
/// `arguments` (its parameter count), all in registers, as [`run`] does:
/// its raw result. The x87/SSE state is the caller's to keep
/// (`hal::native_code::keeping_fpu_state_if`) if the code uses floats.
///
/// Sound only under the crate's contract: `function` is an enterable
/// function of `count` parameters, and what it can reach through the
/// context (which the runtime filled) is valid for the call.
#[inline(always)]
pub fn run_held<H: ContextHost>(
    function: &HeldEntry,
    host: &mut H::Of<'_>,
    arguments: [i64; REGISTER_ARGUMENTS],
    count: usize,
) -> i64 {
    lend::<H, _>(host, |context| {
        // SAFETY: (1) `function.entry` is the start of a function of
        // `function._code`, alive (held) and holding the compiler's
        // output, taking `count` parameters; (2) what the code reaches
        // through the context is valid for the call, and its imports are
        // `trampoline`s of this kind of host, lent just now (the crate's
        // contract); the stack limit leaves `STACK_BUDGET_BYTES` from
        // here.
        unsafe { function.entry.call(context, arguments, count) }
    })
}

/// Runs `function`, which reaches nothing but its arguments, locals and
/// the context's fuel and trap words (self-contained code: a leaf, which
/// calls nothing), on `context` with the first `count` of `arguments`:
/// its raw result. No host: the [`HOST`] word is cleared.
///
/// Sound only under the crate's contract: `function` is a self-contained
/// function of `count` parameters; the other words of `context` are set
/// by the runtime for the case its scan were wrong. As for [`run_held`],
/// float registers are the caller's to keep.
#[inline(always)]
pub fn run_alone(
    function: &HeldEntry,
    context: &mut [u64],
    arguments: [i64; REGISTER_ARGUMENTS],
    count: usize,
) -> i64 {
    let marker = 0u8;
    let here = core::ptr::addr_of!(marker) as u64;
    context[STACK_LIMIT_WORD] = here.wrapping_sub(STACK_BUDGET_BYTES);
    context[HOST_WORD] = 0;
    // SAFETY: (1) as in `run_held`; (2) the code reads and writes only the
    // context's words (the crate's contract), which `context` holds (it
    // has the HOST word, the last), and calls nothing.
    unsafe { function.entry.call(context.as_mut_ptr(), arguments, count) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mov rax, rsi; ret`: returns its first argument after the context.
    const FIRST_ARGUMENT: [u8; 4] = [0x48, 0x89, 0xf0, 0xc3];

    /// `mov rax, [rdi + 16]; ret`: returns the context's third word.
    const THIRD_WORD: [u8; 5] = [0x48, 0x8b, 0x47, 0x10, 0xc3];

    /// `mov rax, [rdi + HOST]; mov rax, [rax]; ret`: reads through the
    /// HOST word (as a callback does): the host's first word.
    const HOSTS_FIRST_WORD: [u8; 8] = [0x48, 0x8b, 0x47, HOST as u8, 0x48, 0x8b, 0x00, 0xc3];

    #[repr(C)]
    struct Instance {
        tag: u64,
        context: [u64; 14],
    }

    impl Host for Instance {
        type Of<'a> = Instance;
    }

    impl ContextHost for Instance {
        fn context(host: &mut Instance) -> &mut [u64] {
            &mut host.context
        }
    }

    #[test]
    fn self_contained_code_gets_its_arguments() {
        let code = Arc::new(CodeMemory::new(&FIRST_ARGUMENT).unwrap());
        let function = HeldEntry::new(code, 0).unwrap();
        let mut context = [0u64; 14];
        assert_eq!(run_alone(&function, &mut context, [42, 0, 0, 0, 0], 1), 42);
        assert_eq!(context[HOST_WORD], 0);
        assert_ne!(context[STACK_LIMIT_WORD], 0);
    }

    #[test]
    fn hosted_code_reaches_its_context_and_host() {
        let code = CodeMemory::new(&[&THIRD_WORD[..], &HOSTS_FIRST_WORD].concat()).unwrap();
        let mut instance = Instance {
            tag: 7,
            context: [0; 14],
        };
        instance.context[2] = 99;
        assert_eq!(
            run::<Instance>(&code, 0, &mut instance, [0; 8], 0, false),
            Some(99)
        );
        let held = HeldEntry::new(Arc::new(code), THIRD_WORD.len()).unwrap();
        assert_eq!(run_held::<Instance>(&held, &mut instance, [0; 5], 0), 7);
        assert_eq!(instance.tag, 7);
    }

    #[test]
    fn past_the_end_is_refused() {
        let code = CodeMemory::new(&FIRST_ARGUMENT).unwrap();
        let mut instance = Instance {
            tag: 0,
            context: [0; 14],
        };
        assert_eq!(
            run::<Instance>(&code, 4, &mut instance, [0; 8], 0, false),
            None
        );
    }

    struct Add;

    impl Procedure<Instance> for Add {
        const ARGUMENTS: usize = 2;
        fn call(host: &mut Instance, arguments: &[u64]) -> u64 {
            host.tag += 1;
            arguments[0] + arguments[1]
        }
    }

    #[test]
    fn a_trampoline_finds_its_host() {
        let address = trampoline::<Instance, Add>();
        let mut instance = Instance {
            tag: 0,
            context: [0; 14],
        };
        // Called as generated code would: set up as `lend` does, the
        // context pointer passed back. Here through `run` on code that
        // jumps to the trampoline (`mov rax, imm64; jmp rax`), its
        // arguments passed on in rsi and rdx.
        let mut bytes = alloc::vec![0x48, 0xb8];
        bytes.extend_from_slice(&address.to_le_bytes());
        bytes.extend_from_slice(&[0xff, 0xe0]);
        let code = CodeMemory::new(&bytes).unwrap();
        assert_eq!(
            run::<Instance>(&code, 0, &mut instance, [40, 2, 0, 0, 0, 0, 0, 0], 2, false),
            Some(42)
        );
        assert_eq!(instance.tag, 1);
    }
}
