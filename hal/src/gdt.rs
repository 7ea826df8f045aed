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

static TSS: spin::Once<TaskStateSegment> = spin::Once::new();
static GDT: spin::Once<(
    GlobalDescriptorTable,
    SegmentSelector,
    SegmentSelector,
    SegmentSelector,
)> = spin::Once::new();

/// Loads the kernel's GDT and TSS. Call once, early.
pub fn init() {
    let tss = TSS.call_once(|| {
        let mut tss = TaskStateSegment::new();
        for (slot, stack) in IST_STACKS.iter().enumerate() {
            let top = stack.0.get() as u64 + IST_STACK_BYTES as u64;
            tss.interrupt_stack_table[slot] = VirtAddr::new(top);
        }
        tss
    });
    let (gdt, code, data, tss_selector) = GDT.call_once(|| {
        let mut gdt = GlobalDescriptorTable::new();
        let code = gdt.append(Descriptor::kernel_code_segment());
        let data = gdt.append(Descriptor::kernel_data_segment());
        let tss_selector = gdt.append(Descriptor::tss_segment(tss));
        (gdt, code, data, tss_selector)
    });
    gdt.load();
    // SAFETY: the selectors index the GDT just loaded, whose descriptors are
    // a 64-bit code segment, a data segment and an available TSS.
    unsafe {
        CS::set_reg(*code);
        DS::set_reg(*data);
        ES::set_reg(*data);
        SS::set_reg(*data);
        load_tss(*tss_selector);
    }
}
