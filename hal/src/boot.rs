//! Boot: the Xen PVH entry point, the 32-bit to 64-bit trampoline, and the
//! boot information handed over by the loader.
//!
//! QEMU's `-kernel` loads an ELF64 image that carries a `XEN_ELFNOTE_PHYS32_ENTRY`
//! note and enters it in 32-bit protected mode with paging off and `ebx`
//! holding the physical address of an `hvm_start_info` structure (Xen's
//! `arch-x86/hvm/start_info.h`, the "PVH boot ABI"). The trampoline below
//! builds temporary page tables that map the first 4 GiB three times:
//! identity (for the trampoline itself), at [`PHYS_OFFSET`] (the physical
//! memory window the rest of the kernel uses) and at the kernel's link
//! address (-2 GiB), enables long mode and jumps to [`hal_rust_entry`], which
//! hands a parsed [`BootInfo`] to the kernel's entry function.
//!
//! The kernel replaces these tables with its own (see `paging`) as soon as it
//! has a frame allocator.

use core::{arch::global_asm, mem::size_of};

use crate::memory::PHYS_OFFSET;

/// Xen note type that names the 32-bit physical entry point.
const XEN_ELFNOTE_PHYS32_ENTRY: u32 = 18;
/// Magic value at the start of `hvm_start_info` ("xEn3" with the high bit set).
const HVM_START_MAGIC: u32 = 0x336e_c578;
/// Most memory-map entries we keep (QEMU reports fewer than ten).
pub const MAX_MEMORY_REGIONS: usize = 64;
/// Most boot modules we keep.
pub const MAX_MODULES: usize = 8;
/// Longest command line we keep, in bytes.
const MAX_CMDLINE: usize = 512;

global_asm!(
    r#"
    .section .note.Xen, "a", @note
    .p2align 2
    .long 4                      /* namesz: "Xen\0" */
    .long 8                      /* descsz */
    .long {note_type}
    .asciz "Xen"
    .p2align 2
    .quad pvh_start32

    .section .boot.bss, "aw", @nobits
    .p2align 12
boot_pml4:      .skip 4096
boot_pdpt_low:  .skip 4096
boot_pdpt_high: .skip 4096
boot_pd:        .skip 4096 * 4
boot_tables_end:

    /* The stack the boot thread runs on (high half, ordinary .bss), with a
       guard page below it that the kernel's own page tables leave unmapped
       (memory::init), so an overflow faults instead of overwriting .bss. */
    .section .bss.boot_stack, "aw", @nobits
    .p2align 12
    .global boot_stack_guard
boot_stack_guard:
    .skip 4096
    .global boot_stack_bottom
boot_stack_bottom:
    .skip {boot_stack_bytes}
boot_stack_top:

    .section .boot.text, "ax"
    .code32
    .global pvh_start32
pvh_start32:
    cli
    cld
    mov esi, ebx                         /* keep the start_info address */

    /* zero the boot page tables */
    mov edi, offset boot_pml4
    mov ecx, 7 * 4096 / 4                /* 7 tables, in dwords */
    xor eax, eax
    rep stosd

    /* PML4[0] (identity) and PML4[256] (PHYS_OFFSET) -> low PDPT */
    mov eax, offset boot_pdpt_low
    or eax, 3
    mov [boot_pml4], eax
    mov [boot_pml4 + 256 * 8], eax
    /* PML4[511] -> high PDPT, whose entry 510 maps -2 GiB to physical 0 */
    mov eax, offset boot_pdpt_high
    or eax, 3
    mov [boot_pml4 + 511 * 8], eax
    mov eax, offset boot_pd
    or eax, 3
    mov [boot_pdpt_high + 510 * 8], eax

    /* low PDPT: four page directories covering 4 GiB */
    mov edi, offset boot_pdpt_low
    mov ecx, 4
2:  mov [edi], eax
    add eax, 4096
    add edi, 8
    loop 2b

    /* 2048 2-MiB pages: present | writable | huge */
    mov edi, offset boot_pd
    mov eax, 0x83
    mov ecx, 2048
3:  mov [edi], eax
    add eax, 0x200000
    add edi, 8
    loop 3b

    /* CR4.PAE, CR3, EFER.LME|NXE, CR0.PG|WP|PE */
    mov eax, cr4
    or eax, 1 << 5
    mov cr4, eax
    mov eax, offset boot_pml4
    mov cr3, eax
    mov ecx, 0xC0000080
    rdmsr
    or eax, (1 << 8) | (1 << 11)
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1
    mov cr0, eax

    lgdt [boot_gdt_pointer]
    mov eax, offset long_mode_entry
    push 0x08
    push eax
    retf                                 /* far return: loads CS = 0x08 */

    .p2align 3
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff             /* 0x08: 64-bit code */
    .quad 0x00cf92000000ffff             /* 0x10: data */
boot_gdt_pointer:
    .word boot_gdt_pointer - boot_gdt - 1
    .long boot_gdt

    .code64
long_mode_entry:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    movabs rsp, offset boot_stack_top
    xor ebp, ebp
    mov edi, esi                         /* start_info physical address */
    movabs rax, offset {rust_entry}
    call rax
4:  hlt
    jmp 4b
"#,
    note_type = const XEN_ELFNOTE_PHYS32_ENTRY,
    boot_stack_bytes = const BOOT_STACK_BYTES,
    rust_entry = sym hal_rust_entry,
);

/// Size of the stack the boot thread runs on.
const BOOT_STACK_BYTES: usize = 64 * 1024;

/// A physical memory region reported by the loader (an e820 entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryRegion {
    /// First physical byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// e820 type: 1 is usable RAM, everything else is reserved.
    pub kind: u32,
}

impl MemoryRegion {
    /// e820 type of ordinary usable RAM.
    pub const USABLE: u32 = 1;

    /// Whether the kernel may allocate from this region.
    pub fn is_usable(&self) -> bool {
        self.kind == Self::USABLE
    }
}

/// A boot module (an initrd given to QEMU with `-initrd`), as the loader
/// described it. Only boot code makes one (private fields, no public
/// constructor), so [`crate::memory::boot_module_bytes`] can trust that its
/// range is a module whose frames the allocator never hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootModule {
    start: u64,
    len: u64,
}

impl BootModule {
    /// No module (fills the unused slots).
    const NONE: BootModule = BootModule { start: 0, len: 0 };

    /// Physical address of the first byte.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the module is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What the loader told the kernel: memory map, command line, modules.
#[derive(Debug)]
pub struct BootInfo {
    regions: [MemoryRegion; MAX_MEMORY_REGIONS],
    region_count: usize,
    modules: [BootModule; MAX_MODULES],
    module_count: usize,
    cmdline: [u8; MAX_CMDLINE],
    cmdline_len: usize,
    /// Physical address of the ACPI RSDP, if the loader gave one.
    pub rsdp: Option<u64>,
}

impl BootInfo {
    /// The physical memory map, in the loader's order.
    pub fn memory_regions(&self) -> &[MemoryRegion] {
        &self.regions[..self.region_count]
    }

    /// The boot modules.
    pub fn modules(&self) -> &[BootModule] {
        &self.modules[..self.module_count]
    }

    /// The kernel command line (QEMU's `-append`), or "" if none or not UTF-8.
    pub fn cmdline(&self) -> &str {
        core::str::from_utf8(&self.cmdline[..self.cmdline_len]).unwrap_or("")
    }

    /// The value of `key=value` on the command line, if present.
    pub fn cmdline_value(&self, key: &str) -> Option<&str> {
        self.cmdline()
            .split_ascii_whitespace()
            .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
    }
}

/// The boot information, filled once by [`hal_rust_entry`] before the kernel runs.
static BOOT_INFO: spin::Once<BootInfo> = spin::Once::new();

/// `struct hvm_start_info` (Xen `arch-x86/hvm/start_info.h`, version 1).
#[repr(C)]
#[derive(Clone, Copy)]
struct HvmStartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
    memmap_paddr: u64,
    memmap_entries: u32,
    reserved: u32,
}

/// `struct hvm_memmap_table_entry`: one e820 region.
#[repr(C)]
#[derive(Clone, Copy)]
struct HvmMemmapEntry {
    addr: u64,
    size: u64,
    kind: u32,
    reserved: u32,
}

/// `struct hvm_modlist_entry`: one boot module.
#[repr(C)]
#[derive(Clone, Copy)]
struct HvmModlistEntry {
    paddr: u64,
    size: u64,
    cmdline_paddr: u64,
    reserved: u64,
}

/// Reads a `T` at physical address `phys` through the boot window.
///
/// # Safety
/// `phys..phys + size_of::<T>()` must be mapped by the boot page tables (below
/// 4 GiB) and hold a valid `T`.
unsafe fn read_phys<T: Copy>(phys: u64) -> T {
    // SAFETY: the caller guarantees the address is mapped and holds a T; the
    // loader's structures need not be aligned, hence read_unaligned.
    unsafe { core::ptr::read_unaligned((PHYS_OFFSET + phys) as *const T) }
}

/// Parses Xen's `hvm_start_info` (version 1: with memory map).
///
/// # Safety
/// `start_info` must be the physical address the PVH loader passed in `ebx`.
unsafe fn parse_start_info(start_info: u64) -> BootInfo {
    let mut info = BootInfo {
        regions: [MemoryRegion::default(); MAX_MEMORY_REGIONS],
        region_count: 0,
        modules: [BootModule::NONE; MAX_MODULES],
        module_count: 0,
        cmdline: [0; MAX_CMDLINE],
        cmdline_len: 0,
        rsdp: None,
    };
    // The PVH loader places start_info and the structures it points to in
    // low RAM, which the boot tables map: every read below relies on it.
    // SAFETY: start_info is the loader's, in that mapped low RAM.
    let start: HvmStartInfo = unsafe { read_phys(start_info) };
    if start.magic != HVM_START_MAGIC {
        return info;
    }
    for index in 0..(start.memmap_entries as usize).min(MAX_MEMORY_REGIONS) {
        let address = start.memmap_paddr + (index * size_of::<HvmMemmapEntry>()) as u64;
        // SAFETY: see above.
        let entry: HvmMemmapEntry = unsafe { read_phys(address) };
        info.regions[index] = MemoryRegion {
            start: entry.addr,
            len: entry.size,
            kind: entry.kind,
        };
        info.region_count = index + 1;
    }
    for index in 0..(start.nr_modules as usize).min(MAX_MODULES) {
        let address = start.modlist_paddr + (index * size_of::<HvmModlistEntry>()) as u64;
        // SAFETY: see above.
        let entry: HvmModlistEntry = unsafe { read_phys(address) };
        info.modules[index] = BootModule {
            start: entry.paddr,
            len: entry.size,
        };
        info.module_count = index + 1;
    }
    let (cmdline, rsdp) = (start.cmdline_paddr, start.rsdp_paddr);
    if cmdline != 0 {
        while info.cmdline_len < MAX_CMDLINE {
            // SAFETY: see above; the command line is NUL-terminated.
            let byte: u8 = unsafe { read_phys(cmdline + info.cmdline_len as u64) };
            if byte == 0 {
                break;
            }
            info.cmdline[info.cmdline_len] = byte;
            info.cmdline_len += 1;
        }
    }
    info.rsdp = (rsdp != 0).then_some(rsdp);
    info
}

extern "Rust" {
    /// The kernel's entry point, defined by [`crate::entry_point!`].
    fn __spindle_kernel_main(boot_info: &'static BootInfo) -> !;
}

/// First Rust code: parses the boot information and calls the kernel.
///
/// # Safety
/// Called once, by the trampoline above, with the PVH `start_info` address.
#[no_mangle]
unsafe extern "C" fn hal_rust_entry(start_info: u64) -> ! {
    // SAFETY: the trampoline passes the address the loader gave in ebx.
    let info = BOOT_INFO.call_once(|| unsafe { parse_start_info(start_info) });
    // SAFETY: the kernel crate defines this symbol through `entry_point!`,
    // with exactly this signature.
    unsafe { __spindle_kernel_main(info) }
}

/// Declares the kernel's entry function: `hal::entry_point!(kernel_main);`
/// where `fn kernel_main(boot: &'static hal::boot::BootInfo) -> !`.
///
/// The macro exists so that the kernel crate, which forbids unsafe code,
/// need not write the `#[no_mangle]` attribute itself.
#[macro_export]
macro_rules! entry_point {
    ($main:path) => {
        #[export_name = "__spindle_kernel_main"]
        fn __spindle_kernel_main(boot_info: &'static $crate::boot::BootInfo) -> ! {
            let main: fn(&'static $crate::boot::BootInfo) -> ! = $main;
            main(boot_info)
        }
    };
}
