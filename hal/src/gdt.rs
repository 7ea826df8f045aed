//! The GDT and the TSS, with separate interrupt stacks (IST) for the
//! exceptions that must work even when the current stack is unusable: a
//! double fault (e.g. a kernel stack overflow into its guard page), an NMI and
//! a machine check (Intel SDM vol. 3, 6.14.5 "Interrupt Stack Table").

use core::cell::UnsafeCell;

use x86_64::{
    instructions::{
        segmentation::{Segment, CS, DS, ES, SS},
        tables::load_tss,
    },
    structures::{
        gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector},
        tss::TaskStateSegment,
    },
    VirtAddr,
};

/// IST slot (1-based, as in the IDT) of the double-fault stack.
pub const DOUBLE_FAULT_IST: u8 = 1;
/// IST slot of the NMI stack.
pub const NMI_IST: u8 = 2;
/// IST slot of the machine-check stack.
pub const MACHINE_CHECK_IST: u8 = 3;

const IST_STACK_BYTES: usize = 16 * 1024;

/// One IST stack; the CPU writes to it, hence the `UnsafeCell`.
#[repr(C, align(16))]
struct IstStack(UnsafeCell<[u8; IST_STACK_BYTES]>);

// SAFETY: only the CPU uses these stacks (as interrupt stacks); Rust code
// takes nothing but their addresses.
unsafe impl Sync for IstStack {}

static IST_STACKS: [IstStack; 3] = [
    IstStack(UnsafeCell::new([0; IST_STACK_BYTES])),
    IstStack(UnsafeCell::new([0; IST_STACK_BYTES])),
    IstStack(UnsafeCell::new([0; IST_STACK_BYTES])),
];

/// The TSS. The CPU reads it; the kernel writes `privilege_stack_table[0]`
/// (RSP0, the stack a trap from user mode lands on) at every switch to a
/// thread, with interrupts disabled.
struct TssCell(UnsafeCell<TaskStateSegment>);

// SAFETY: one CPU; the only write after `init` is `set_kernel_stack`, made
// with interrupts disabled (so no trap reads a half-written RSP0).
unsafe impl Sync for TssCell {}

static TSS: TssCell = TssCell(UnsafeCell::new(TaskStateSegment::new()));

/// The segment selectors, as the GDT lays them out. The order is the one
/// `syscall`/`sysret` require (STAR): kernel code, kernel data, then user
/// data and user code, so that user SS = user base + 8 and CS = base + 16.
#[derive(Clone, Copy, Debug)]
pub struct Selectors {
    /// Kernel code (ring 0).
    pub kernel_code: SegmentSelector,
    /// Kernel data and stack (ring 0).
    pub kernel_data: SegmentSelector,
    /// User data and stack (ring 3, RPL 3).
    pub user_data: SegmentSelector,
    /// User code (ring 3, RPL 3).
    pub user_code: SegmentSelector,
    /// The TSS.
    pub tss: SegmentSelector,
}

static GDT: spin::Once<(GlobalDescriptorTable, Selectors)> = spin::Once::new();

/// Loads the kernel's GDT and TSS. Call once, early.
pub fn init() {
    // SAFETY: before the TSS is loaded nothing else refers to it, and
    // `init` runs once (GDT's `call_once` below would be the second user).
    let tss = unsafe { &mut *TSS.0.get() };
    for (slot, stack) in IST_STACKS.iter().enumerate() {
        let top = stack.0.get() as u64 + IST_STACK_BYTES as u64;
        tss.interrupt_stack_table[slot] = VirtAddr::new(top);
    }
    let (gdt, selectors) = GDT.call_once(|| {
        let mut gdt = GlobalDescriptorTable::new();
        let kernel_code = gdt.append(Descriptor::kernel_code_segment());
        let kernel_data = gdt.append(Descriptor::kernel_data_segment());
        let user_data = gdt.append(Descriptor::user_data_segment());
        let user_code = gdt.append(Descriptor::user_code_segment());
        // SAFETY: the TSS is a static, so the pointer stays valid for the
        // GDT's lifetime; a raw pointer, not a `&'static`, because RSP0 is
        // written later through the cell.
        let tss = gdt.append(unsafe { Descriptor::tss_segment_unchecked(TSS.0.get()) });
        let selectors = Selectors {
            kernel_code,
            kernel_data,
            user_data,
            user_code,
            tss,
        };
        (gdt, selectors)
    });
    gdt.load();
    // SAFETY: the selectors index the GDT just loaded, whose descriptors are
    // a 64-bit code segment, a data segment and an available TSS.
    unsafe {
        CS::set_reg(selectors.kernel_code);
        DS::set_reg(selectors.kernel_data);
        ES::set_reg(selectors.kernel_data);
        SS::set_reg(selectors.kernel_data);
        load_tss(selectors.tss);
    }
}

/// The GDT's selectors (after [`init`]).
pub fn selectors() -> Selectors {
    GDT.get().expect("gdt::init has not run").1
}

/// Sets the stack traps from user mode land on (TSS RSP0). Only the context
/// switch calls it, with the incoming thread's own kernel stack top and
/// interrupts disabled.
pub(crate) fn set_kernel_stack(top: u64) {
    debug_assert!(!crate::cpu::are_interrupts_enabled());
    // SAFETY: see `TssCell`: one CPU, interrupts disabled, and a u64 field
    // the CPU reads only on a privilege change (which cannot happen here).
    unsafe { (*TSS.0.get()).privilege_stack_table[0] = VirtAddr::new(top) };
}
