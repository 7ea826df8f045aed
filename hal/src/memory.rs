//! Physical memory and the kernel's page tables.
//!
//! Address space layout (x86_64, 4-level paging):
//!
//! | virtual range                                   | what                                  |
//! |-------------------------------------------------|---------------------------------------|
//! | `0` .. `0x0000_8000_0000_0000`                  | user space (empty for now)            |
//! | [`PHYS_OFFSET`] .. `+ 4 GiB` (or top of RAM)    | window onto all physical memory (NX)  |
//! | [`HEAP_BASE`] .. `+ HEAP_MAX_BYTES`             | kernel heap, grown on demand          |
//! | [`STACKS_BASE`] ..                              | kernel thread stacks with guard pages |
//! | [`GENERAL_BASE`] .. [`GENERAL_END`]             | pages mapped through [`map`] et al.   |
//! | [`CODE_BASE`] .. [`CODE_END`]                   | generated code (`native_code`), W^X   |
//! | [`LINEAR_BASE`] .. [`LINEAR_END`]               | Wasm linear memories (`linear_memory`) |
//! | `0xffff_ffff_8000_0000` ..                      | the kernel image (text RX, rodata R, data RW) |
//!
//! The kernel owns its page tables: [`init`] builds a fresh PML4 from frames
//! of the frame allocator and switches to it, replacing the trampoline's
//! tables. Page-table manipulation uses the `x86_64` crate's
//! `OffsetPageTable`, which walks tables through the physical window.
//!
//! The public [`map`]/[`unmap`]/[`translate`]/[`protect`] operate only on the
//! general region and always back a page with a fresh zeroed frame that the
//! mapping owns, so safe code can use them without ever aliasing memory that
//! Rust objects live in.

use x86_64::{
    registers::control::{Cr3, Cr3Flags},
    structures::paging::{
        mapper::{MapToError, MappedFrame, TranslateResult, UnmapError},
        FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame,
        Size2MiB, Size4KiB, Translate,
    },
    PhysAddr, VirtAddr,
};

use crate::{
    boot::BootInfo,
    frames::{FrameBitmap, FRAME_SIZE, MAX_PHYS_BYTES},
    sync::IrqMutex,
};

/// Virtual address at which all physical memory is mapped.
pub const PHYS_OFFSET: u64 = 0xffff_8000_0000_0000;
/// Base of the kernel heap.
pub const HEAP_BASE: u64 = 0xffff_c000_0000_0000;
/// Largest the kernel heap may grow.
pub const HEAP_MAX_BYTES: u64 = 1 << 30;
/// Base of the kernel thread stacks.
pub const STACKS_BASE: u64 = 0xffff_c100_0000_0000;
/// Base of the region that [`map`] and friends manage.
pub const GENERAL_BASE: u64 = 0xffff_c200_0000_0000;
/// End (exclusive) of the region that [`map`] and friends manage.
pub const GENERAL_END: u64 = 0xffff_c300_0000_0000;
/// Start of the region of generated code (`crate::native_code`): pages
/// there are writable while they are filled, then read-execute.
pub const CODE_BASE: u64 = 0xffff_c300_0000_0000;
/// End (exclusive) of the code region (16 GiB of address space).
pub const CODE_END: u64 = CODE_BASE + (16 << 30);
/// Start of the region of Wasm linear memories (`crate::linear_memory`):
/// one 4 GiB slot each, mapped as it grows, so a memory never moves.
pub const LINEAR_BASE: u64 = 0xffff_c400_0000_0000;
/// End (exclusive) of the linear-memory region (2 TiB: 512 memories).
pub const LINEAR_END: u64 = LINEAR_BASE + (2 << 40);
/// Virtual address the kernel image is linked at, minus its physical address.
pub const KERNEL_VIRT_BASE: u64 = 0xffff_ffff_8000_0000;
pub use crate::paging::{MapError, PAGE_SIZE};

const HUGE_PAGE_SIZE: u64 = 2 << 20;
/// Physical address of the local and I/O APIC registers (mapped uncached).
const APIC_MMIO_RANGE: (u64, u64) = (0xfec0_0000, 0xfee0_1000);

extern "C" {
    static __boot_start: u8;
    static __kernel_text_start: u8;
    static __kernel_text_end: u8;
    static __kernel_rodata_start: u8;
    static __kernel_rodata_end: u8;
    static __kernel_data_start: u8;
    static __kernel_data_end: u8;
    /// The guard page below the boot stack (hal/src/boot.rs).
    #[link_name = "boot_stack_guard"]
    static BOOT_STACK_GUARD: u8;
}

/// Address of a linker-script symbol.
macro_rules! linker_symbol {
    ($name:ident) => {
        // Only the address of the symbol is taken, never its value.
        core::ptr::addr_of!($name) as u64
    };
}

/// The frame allocator. Lock order: `PAGE_TABLES` before `FRAMES`.
pub(crate) static FRAMES: IrqMutex<FrameBitmap> = IrqMutex::new(FrameBitmap::new());

/// Physical address of the kernel's PML4 (the root of every kernel thread's
/// address space; user address spaces share its upper half).
static KERNEL_ROOT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Physical address of the kernel's PML4 (0 before [`init`]).
pub(crate) fn kernel_root() -> u64 {
    KERNEL_ROOT.load(core::sync::atomic::Ordering::Relaxed)
}

/// The kernel's page tables, once [`init`] has built them.
static PAGE_TABLES: IrqMutex<Option<OffsetPageTable<'static>>> = IrqMutex::new(None);

/// Allocation of page-table frames from [`FRAMES`].
pub(crate) struct TableFrames<'a>(pub(crate) &'a mut FrameBitmap);

// SAFETY: every frame returned comes from the bitmap, which hands out each
// free frame once, and is zeroed before being returned.
unsafe impl FrameAllocator<Size4KiB> for TableFrames<'_> {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        let address = self.0.allocate()?;
        zero_frame(address);
        Some(PhysFrame::containing_address(PhysAddr::new(address)))
    }
}

/// Fills the frame at physical `address` with zeros: an unrolled loop of
/// eight-byte stores. `write_bytes` became a byte loop (no SSE in the
/// kernel), and string instructions (`rep stosq`) run one element per
/// step under TCG; each cost about 7 µs a page, the unrolled loop a
/// fraction of it.
fn zero_frame(address: u64) {
    // SAFETY: the frame is mapped by the physical window and was just taken
    // from the allocator, so nothing else refers to it; the loop stores
    // exactly its 64 blocks of 64 bytes.
    unsafe {
        core::arch::asm!(
            "2:",
            "mov qword ptr [{at}], {zero}",
            "mov qword ptr [{at} + 8], {zero}",
            "mov qword ptr [{at} + 16], {zero}",
            "mov qword ptr [{at} + 24], {zero}",
            "mov qword ptr [{at} + 32], {zero}",
            "mov qword ptr [{at} + 40], {zero}",
            "mov qword ptr [{at} + 48], {zero}",
            "mov qword ptr [{at} + 56], {zero}",
            "add {at}, 64",
            "dec {blocks}",
            "jnz 2b",
            at = inout(reg) PHYS_OFFSET + address => _,
            blocks = inout(reg) FRAME_SIZE / 64 => _,
            zero = in(reg) 0u64,
            options(nostack)
        )
    };
}

/// Copies the whole frame at physical `from` to the frame at `to`, in an
/// unrolled loop of eight-byte moves (for the reason given at
/// `zero_frame`).
///
/// # Safety
/// Both must be frames of RAM (in the window), `to` owned by the caller
/// and referred to by nothing else, and the two must differ.
pub(crate) unsafe fn copy_frame(from: u64, to: u64) {
    // SAFETY: guaranteed by the caller; the loop moves exactly one frame's
    // 128 blocks of 32 bytes.
    unsafe {
        core::arch::asm!(
            "2:",
            "mov {a}, qword ptr [{from}]",
            "mov {b}, qword ptr [{from} + 8]",
            "mov {c}, qword ptr [{from} + 16]",
            "mov {d}, qword ptr [{from} + 24]",
            "mov qword ptr [{to}], {a}",
            "mov qword ptr [{to} + 8], {b}",
            "mov qword ptr [{to} + 16], {c}",
            "mov qword ptr [{to} + 24], {d}",
            "add {from}, 32",
            "add {to}, 32",
            "dec {blocks}",
            "jnz 2b",
            from = inout(reg) PHYS_OFFSET + from => _,
            to = inout(reg) PHYS_OFFSET + to => _,
            blocks = inout(reg) FRAME_SIZE / 32 => _,
            a = out(reg) _,
            b = out(reg) _,
            c = out(reg) _,
            d = out(reg) _,
            options(nostack)
        )
    };
}

/// Virtual address of physical `address` in the window.
pub fn phys_to_virt(address: u64) -> u64 {
    PHYS_OFFSET + address
}

/// The guard page below the boot stack, left unmapped (an overflow of the
/// boot stack faults there).
pub fn boot_stack_guard() -> u64 {
    linker_symbol!(BOOT_STACK_GUARD)
}

/// The bytes of a boot module (an initrd), read through the physical window.
///
/// The module's frames are reserved in [`init`] and never handed out, and
/// nothing writes to them, so a shared `'static` slice is sound.
pub fn boot_module_bytes(module: &crate::boot::BootModule) -> &'static [u8] {
    let end = module.start().saturating_add(module.len());
    assert!(
        end <= MAX_PHYS_BYTES,
        "boot module beyond the physical window"
    );
    // SAFETY: see above; the window maps all physical memory below 4 GiB.
    unsafe {
        core::slice::from_raw_parts(
            phys_to_virt(module.start()) as *const u8,
            module.len() as usize,
        )
    }
}

/// Frame allocator counters, for `mem` in the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames of usable RAM under management.
    pub total: usize,
    /// Frames currently free.
    pub free: usize,
    /// Frames holding the kernel's own page tables (made on demand as the
    /// heap and the kernel-stack area first reach an address, and kept).
    pub kernel_tables: usize,
}

/// Page-table frames the kernel mapper has made since boot (they are
/// never freed: an emptied table stays for the next mapping there).
static KERNEL_TABLE_FRAMES: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

/// Frames free, or kept by the kernel for good once used: the heap (which
/// never shrinks) and the kernel's page tables. This count falling across
/// some work means the work kept frames it should have given back.
pub fn frames_free_or_kept() -> u64 {
    let stats = frame_stats();
    (stats.free + stats.kernel_tables) as u64
        + crate::heap::stats().mapped_bytes / crate::frames::FRAME_SIZE
}

/// Current frame allocator counters.
pub fn frame_stats() -> FrameStats {
    let frames = FRAMES.lock();
    FrameStats {
        total: frames.managed_frames(),
        free: frames.free_frames(),
        kernel_tables: KERNEL_TABLE_FRAMES.load(core::sync::atomic::Ordering::Relaxed),
    }
}

/// A physical frame handed out by [`allocate_frame`] and owned by its
/// holder. Only the allocator makes one (the field is private and the type
/// neither `Clone` nor `Copy`), and [`free_frame`] consumes it: safe code
/// cannot free a frame it was never given, one in use by the page tables,
/// or one twice. Dropping it without freeing leaks the frame, nothing
/// worse.
#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    address: u64,
}

impl Frame {
    /// The frame's physical address.
    pub fn address(&self) -> u64 {
        self.address
    }
}

impl Frame {
    /// Another hold on this frame, owned like the first: the frame is
    /// freed when every holder (each with [`free_frame`]) and every
    /// mapping of it has let go. The page cache hands its frames out this
    /// way.
    pub fn share(&self) -> Frame {
        FRAMES
            .lock()
            .share(self.address)
            .expect("a held frame was free");
        Frame {
            address: self.address,
        }
    }

    /// Copies `bytes` into the frame at `offset` (through the physical
    /// window). Fails, copying nothing, if they would not fit in the frame.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), MapError> {
        let end = offset.checked_add(bytes.len());
        if end.is_none_or(|end| end > PAGE_SIZE as usize) {
            return Err(MapError::OutsideRegion(self.address + offset as u64));
        }
        // SAFETY: the range is inside this frame (checked above), which the
        // holder owns and the window maps; user mappings of the frame are
        // never Rust references, so nothing aliases the bytes written.
        unsafe {
            core::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (PHYS_OFFSET + self.address + offset as u64) as *mut u8,
                bytes.len(),
            )
        };
        Ok(())
    }

    /// Copies bytes of the frame from `offset` into `out`. Fails, copying
    /// nothing, if the range would leave the frame.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), MapError> {
        let end = offset.checked_add(out.len());
        if end.is_none_or(|end| end > PAGE_SIZE as usize) {
            return Err(MapError::OutsideRegion(self.address + offset as u64));
        }
        // SAFETY: as in `write`: inside a frame the holder owns, through the
        // window, into a buffer the caller lent us.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (PHYS_OFFSET + self.address + offset as u64) as *const u8,
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }
}

/// Allocates one zeroed physical frame.
pub fn allocate_frame() -> Option<Frame> {
    let address = FRAMES.lock().allocate()?;
    zero_frame(address);
    Some(Frame { address })
}

/// Allocates one zeroed physical frame of shared memory: its owners (the
/// address spaces of processes sharing a `MAP_SHARED` mapping) write it
/// together, so a mapping of it stays writable while shared instead of
/// being copied on write (`frames::FrameBitmap::mark_shared_memory`).
pub fn allocate_shared_memory_frame() -> Option<Frame> {
    let frame = allocate_frame()?;
    FRAMES
        .lock()
        .mark_shared_memory(frame.address)
        .expect("a frame just allocated was free");
    Some(frame)
}

/// Gives `frame` back to the allocator.
pub fn free_frame(frame: Frame) {
    // A `Frame` came from `allocate_frame` and was not freed since (it is
    // consumed here), so the allocator has it marked in use.
    FRAMES
        .lock()
        .free(frame.address)
        .expect("an allocated frame was free");
}

/// Sets up the frame allocator from the boot memory map and switches to page
/// tables the kernel owns. Call once, early, before the heap is used.
pub fn init(boot_info: &BootInfo) {
    let image = (
        linker_symbol!(__boot_start),
        linker_symbol!(__kernel_data_end) - KERNEL_VIRT_BASE,
    );
    {
        let mut frames = FRAMES.lock();
        // Reserve the first MiB (BIOS data, the PVH start info), the kernel
        // image and the boot modules.
        let mut reserved = [(0u64, 0u64); 2 + crate::boot::MAX_MODULES];
        reserved[0] = (0, 0x10_0000);
        reserved[1] = image;
        for (slot, module) in reserved[2..].iter_mut().zip(boot_info.modules()) {
            *slot = (module.start(), module.start() + module.len());
        }
        for region in boot_info
            .memory_regions()
            .iter()
            .filter(|region| region.is_usable())
        {
            frames.add_region(region.start, region.start + region.len, &reserved);
        }
        give_owner_table(&mut frames);
    }
    let ram_top = boot_info
        .memory_regions()
        .iter()
        .map(|region| region.start + region.len)
        .max()
        .unwrap_or(0)
        .min(MAX_PHYS_BYTES);
    let mut ram = [(0u64, 0u64); MAX_RAM_RANGES];
    let mut ram_ranges = 0;
    for region in boot_info.memory_regions().iter().filter(|r| r.is_usable()) {
        if ram_ranges < MAX_RAM_RANGES {
            ram[ram_ranges] = (region.start, region.start + region.len);
            ram_ranges += 1;
        }
    }
    build_kernel_tables(ram_top.max(MAX_WINDOW_BYTES), &ram[..ram_ranges]);
}

/// Takes the frames of the allocator's owner table (one count per frame,
/// see `frames`) from the allocator itself, at boot, before any frame is
/// shared. They are never given back.
fn give_owner_table(frames: &mut FrameBitmap) {
    let entries = frames.owner_table_len();
    let bytes = (entries * core::mem::size_of::<u32>()) as u64;
    let pages = bytes.div_ceil(PAGE_SIZE) as usize;
    let base = frames
        .allocate_contiguous(pages)
        .expect("no memory for the frame owner table");
    let table = (PHYS_OFFSET + base) as *mut u32;
    // SAFETY: the `pages` frames from `base` were just taken from the
    // allocator, contiguous, and are never freed, so nothing else refers
    // to them, now or later ('static); the boot tables and then the
    // kernel's map all physical memory at PHYS_OFFSET; `entries` u32s fit
    // in `pages` pages, and the frames are zeroed before the slice is made.
    let table = unsafe {
        core::ptr::write_bytes(table as *mut u8, 0, pages * PAGE_SIZE as usize);
        core::slice::from_raw_parts_mut(table, entries)
    };
    frames.give_owner_table(table);
}

/// Usable RAM ranges the window tells apart from device memory; the boot
/// memory map of a PC has a handful.
const MAX_RAM_RANGES: usize = 32;

/// Whether the window page `[start, start + HUGE_PAGE_SIZE)` holds device
/// memory only (no usable RAM): such pages are mapped uncached, since
/// device registers (PCI BARs, the APICs) must see every access in order.
fn is_device_memory(start: u64, ram: &[(u64, u64)]) -> bool {
    !ram.iter()
        .any(|&(low, high)| start < high && start + HUGE_PAGE_SIZE > low)
}

/// Virtual address of `size` bytes of device memory at `physical`, as
/// the window maps it (uncached), or `None` if any of the range is RAM or
/// lies beyond the window. For drivers reaching a device's registers.
pub fn device_memory(physical: u64, size: u64) -> Option<u64> {
    let end = physical.checked_add(size)?;
    if size == 0 || end > DEVICE_WINDOW_BYTES {
        return None;
    }
    let pages = DEVICE_PAGES.lock();
    let first = physical / HUGE_PAGE_SIZE;
    let last = (end - 1) / HUGE_PAGE_SIZE;
    (first..=last)
        .all(|page| pages[page as usize / 64] & (1 << (page % 64)) != 0)
        .then(|| phys_to_virt(physical))
}

/// Bytes of physical address space the window maps at least (RAM is
/// managed up to `MAX_PHYS_BYTES`, the same 4 GiB).
pub(crate) const MAX_WINDOW_BYTES: u64 = 4 << 30;

/// Device memory is looked for below 4 GiB (PCI's 32-bit hole, the APICs).
const DEVICE_WINDOW_BYTES: u64 = 4 << 30;

/// Window pages (2 MiB, below [`DEVICE_WINDOW_BYTES`]) mapped uncached as
/// device memory: bit set = device page. A fixed array: the window is
/// built before the heap exists.
static DEVICE_PAGES: spin::Mutex<[u64; (DEVICE_WINDOW_BYTES / HUGE_PAGE_SIZE / 64) as usize]> =
    spin::Mutex::new([0; (DEVICE_WINDOW_BYTES / HUGE_PAGE_SIZE / 64) as usize]);

fn build_kernel_tables(window_bytes: u64, ram: &[(u64, u64)]) {
    let mut frames = FRAMES.lock();
    let mut table_frames = TableFrames(&mut frames);
    let pml4_frame = table_frames
        .allocate_frame()
        .expect("no frame for the kernel PML4");
    // SAFETY: the frame was just allocated and zeroed, is mapped by the
    // window, and is used as nothing but this page table.
    let pml4: &'static mut PageTable =
        unsafe { &mut *((PHYS_OFFSET + pml4_frame.start_address().as_u64()) as *mut PageTable) };
    // SAFETY: the whole of physical memory is mapped at PHYS_OFFSET (by the
    // boot tables now, and by this table once it is active, see below).
    let mut mapper = unsafe { OffsetPageTable::new(pml4, VirtAddr::new(PHYS_OFFSET)) };

    // 1. The physical window, with 2 MiB pages.
    let window_flags = PageTableFlags::PRESENT
        | PageTableFlags::WRITABLE
        | PageTableFlags::NO_EXECUTE
        | PageTableFlags::GLOBAL;
    let mut physical = 0;
    while physical < window_bytes {
        let mut flags = window_flags;
        if (physical < APIC_MMIO_RANGE.1 && physical + HUGE_PAGE_SIZE > APIC_MMIO_RANGE.0)
            || is_device_memory(physical, ram)
        {
            flags |= PageTableFlags::NO_CACHE | PageTableFlags::WRITE_THROUGH;
            if physical < DEVICE_WINDOW_BYTES {
                let page = (physical / HUGE_PAGE_SIZE) as usize;
                DEVICE_PAGES.lock()[page / 64] |= 1 << (page % 64);
            }
        }
        let page = Page::<Size2MiB>::containing_address(VirtAddr::new(PHYS_OFFSET + physical));
        let frame = PhysFrame::<Size2MiB>::containing_address(PhysAddr::new(physical));
        // SAFETY: the window maps each physical frame once, to its own slot;
        // nothing is mapped there yet. The flush is unnecessary: the table
        // is not active.
        unsafe { mapper.map_to(page, frame, flags, &mut table_frames) }
            .expect("mapping the physical window")
            .ignore();
        physical += HUGE_PAGE_SIZE;
    }

    // 2. The kernel image, one permission set per section group.
    let sections = [
        (
            linker_symbol!(__kernel_text_start),
            linker_symbol!(__kernel_text_end),
            PageTableFlags::PRESENT | PageTableFlags::GLOBAL,
        ),
        (
            linker_symbol!(__kernel_rodata_start),
            linker_symbol!(__kernel_rodata_end),
            PageTableFlags::PRESENT | PageTableFlags::GLOBAL | PageTableFlags::NO_EXECUTE,
        ),
        (
            linker_symbol!(__kernel_data_start),
            linker_symbol!(__kernel_data_end),
            PageTableFlags::PRESENT
                | PageTableFlags::WRITABLE
                | PageTableFlags::GLOBAL
                | PageTableFlags::NO_EXECUTE,
        ),
    ];
    let boot_stack_guard = linker_symbol!(BOOT_STACK_GUARD);
    for (start, end, flags) in sections {
        let mut virt = start;
        while virt < end {
            if virt == boot_stack_guard {
                // Left unmapped: the boot stack's guard page.
                virt += PAGE_SIZE;
                continue;
            }
            let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt));
            let frame = PhysFrame::containing_address(PhysAddr::new(virt - KERNEL_VIRT_BASE));
            // SAFETY: maps the image onto the frames it was loaded into, as
            // the boot tables did, with tighter permissions.
            unsafe { mapper.map_to(page, frame, flags, &mut table_frames) }
                .expect("mapping the kernel image")
                .ignore();
            virt += PAGE_SIZE;
        }
    }
    // 3. Every upper-half PML4 entry gets its PDPT now, so kernel mappings
    //    made later never add a PML4 entry: user address spaces copy these
    //    256 entries once and stay in step with the kernel for good.
    for index in 256..512 {
        if mapper.level_4_table()[index].is_unused() {
            let table = table_frames
                .allocate_frame()
                .expect("no frame for a kernel PDPT");
            mapper.level_4_table_mut()[index]
                .set_frame(table, PageTableFlags::PRESENT | PageTableFlags::WRITABLE);
        }
    }
    KERNEL_ROOT.store(
        pml4_frame.start_address().as_u64(),
        core::sync::atomic::Ordering::Relaxed,
    );

    drop(frames);

    // The new tables map the kernel image (this code; the boot stack is in
    // .bss) and the physical window: all that is still in use of the old
    // ones (the trampoline and the identity map are no longer needed).
    // SAFETY: see above.
    unsafe { Cr3::write(pml4_frame, Cr3Flags::empty()) };
    *PAGE_TABLES.lock() = Some(mapper);
}

/// How a page may be accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Readable, not writable, not executable.
    ReadOnly,
    /// Readable and writable, not executable.
    ReadWrite,
}

impl Protection {
    fn flags(self) -> PageTableFlags {
        let base = PageTableFlags::PRESENT | PageTableFlags::NO_EXECUTE;
        match self {
            Self::ReadOnly => base,
            Self::ReadWrite => base | PageTableFlags::WRITABLE,
        }
    }
}

fn check_general(virt: u64) -> Result<Page<Size4KiB>, MapError> {
    if !virt.is_multiple_of(PAGE_SIZE) {
        return Err(MapError::Unaligned(virt));
    }
    if !(GENERAL_BASE..GENERAL_END).contains(&virt) {
        return Err(MapError::OutsideRegion(virt));
    }
    Ok(Page::containing_address(VirtAddr::new(virt)))
}

/// Runs `f` on the kernel page tables and frame allocator.
fn with_tables<R>(f: impl FnOnce(&mut OffsetPageTable<'static>, &mut TableFrames) -> R) -> R {
    let mut tables = PAGE_TABLES.lock();
    let mapper = tables.as_mut().expect("memory::init has not run");
    let mut frames = FRAMES.lock();
    f(mapper, &mut TableFrames(&mut frames))
}

/// Maps kernel page `virt` (page aligned, in the general region) to a fresh
/// zeroed frame and returns the frame's physical address.
pub fn map(virt: u64, protection: Protection) -> Result<u64, MapError> {
    let page = check_general(virt)?;
    map_fresh(page, protection.flags())
}

/// Maps `page` to a fresh zeroed frame with `flags` (internal regions too).
fn map_fresh(page: Page<Size4KiB>, flags: PageTableFlags) -> Result<u64, MapError> {
    with_tables(|mapper, frames| {
        let frame = frames.allocate_frame().ok_or(MapError::OutOfFrames)?;
        let free_before = frames.0.free_frames();
        // SAFETY: the frame is fresh, so the new mapping aliases nothing; the
        // page is in a kernel region this module manages.
        let mapped = unsafe { mapper.map_to(page, frame, flags | PageTableFlags::GLOBAL, frames) };
        // What `map_to` took beyond the page's frame: new page tables.
        let tables_made = free_before.saturating_sub(frames.0.free_frames());
        KERNEL_TABLE_FRAMES.fetch_add(tables_made, core::sync::atomic::Ordering::Relaxed);
        match mapped {
            Ok(flush) => {
                flush.flush();
                Ok(frame.start_address().as_u64())
            }
            Err(error) => {
                let _ = frames.0.free(frame.start_address().as_u64());
                Err(match error {
                    MapToError::FrameAllocationFailed => MapError::OutOfFrames,
                    _ => MapError::AlreadyMapped(page.start_address().as_u64()),
                })
            }
        }
    })
}

/// Unmaps kernel page `virt` (in the general region) and frees its frame.
pub fn unmap(virt: u64) -> Result<(), MapError> {
    let page = check_general(virt)?;
    unmap_and_free(page)
}

fn unmap_and_free(page: Page<Size4KiB>) -> Result<(), MapError> {
    with_tables(|mapper, frames| {
        let (frame, flush) = mapper
            .unmap(page)
            .map_err(|_: UnmapError| MapError::NotMapped(page.start_address().as_u64()))?;
        flush.flush();
        frames
            .0
            .free(frame.start_address().as_u64())
            .expect("a mapped frame was already free");
        Ok(())
    })
}

/// Changes the protection of mapped page `virt` (in the general region).
pub fn protect(virt: u64, protection: Protection) -> Result<(), MapError> {
    let page = check_general(virt)?;
    with_tables(|mapper, _| {
        // SAFETY: changing the permissions of a page the general region owns
        // cannot invalidate any Rust reference (nothing refers to it).
        let flush =
            unsafe { mapper.update_flags(page, protection.flags() | PageTableFlags::GLOBAL) }
                .map_err(|_| MapError::NotMapped(virt))?;
        flush.flush();
        Ok(())
    })
}

/// The physical address `virt` maps to, if any (any kernel address).
pub fn translate(virt: u64) -> Option<u64> {
    let tables = PAGE_TABLES.lock();
    tables
        .as_ref()?
        .translate_addr(VirtAddr::try_new(virt).ok()?)
        .map(|phys| phys.as_u64())
}

/// The protection of page `virt`, if mapped (any kernel address).
pub fn protection_of(virt: u64) -> Option<Protection> {
    let tables = PAGE_TABLES.lock();
    match tables.as_ref()?.translate(VirtAddr::try_new(virt).ok()?) {
        TranslateResult::Mapped {
            flags,
            frame: MappedFrame::Size4KiB(_),
            ..
        }
        | TranslateResult::Mapped { flags, .. } => {
            Some(if flags.contains(PageTableFlags::WRITABLE) {
                Protection::ReadWrite
            } else {
                Protection::ReadOnly
            })
        }
        _ => None,
    }
}

/// Stores `value` at kernel address `virt` in the general region, without
/// checking the mapping first: if the page is unmapped or read-only the CPU
/// raises a page fault, which the kernel's trap policy handles (normally by
/// ending the faulting thread). This is how tests provoke page faults.
pub fn store_unchecked(virt: u64, value: u64) -> Result<(), MapError> {
    check_general(virt & !(PAGE_SIZE - 1))?;
    if !virt.is_multiple_of(8) {
        return Err(MapError::Unaligned(virt));
    }
    // SAFETY: the general region holds only pages mapped by `map`, each
    // backed by a frame that no Rust object uses, so the store cannot corrupt
    // memory; if the page is absent or read-only the store faults instead.
    unsafe { core::ptr::write_volatile(virt as *mut u64, value) };
    Ok(())
}

/// Loads the value at kernel address `virt` in the general region (faults,
/// like [`store_unchecked`], if unmapped).
pub fn load_unchecked(virt: u64) -> Result<u64, MapError> {
    check_general(virt & !(PAGE_SIZE - 1))?;
    if !virt.is_multiple_of(8) {
        return Err(MapError::Unaligned(virt));
    }
    // SAFETY: as for `store_unchecked`; a read of a u64 from such a page is
    // always a valid value.
    Ok(unsafe { core::ptr::read_volatile(virt as *const u64) })
}

/// Maps `pages` fresh read-write pages at `virt` in an internal region
/// (heap or stacks).
pub(crate) fn map_internal(virt: u64, pages: u64) -> Result<(), MapError> {
    map_pages(virt, pages, Protection::ReadWrite.flags())
}

/// Maps `pages` fresh pages from `virt`, all or none: if one fails, the
/// ones already mapped are unmapped and their frames freed, so the caller
/// can try the same range again (the heap grows this way; a partial
/// mapping left behind made every later growth fail on the first page).
fn map_pages(virt: u64, pages: u64, flags: PageTableFlags) -> Result<(), MapError> {
    for index in 0..pages {
        let page = Page::containing_address(VirtAddr::new(virt + index * PAGE_SIZE));
        if let Err(error) = map_fresh(page, flags) {
            unmap_internal(virt, index);
            return Err(error);
        }
    }
    Ok(())
}

/// Maps `pages` kernel pages from `virt` (page aligned, all in the general
/// region) to fresh zeroed frames, all or none.
pub fn map_range(virt: u64, pages: u64, protection: Protection) -> Result<(), MapError> {
    check_general(virt)?;
    let last = virt.saturating_add(pages.saturating_sub(1).saturating_mul(PAGE_SIZE));
    if pages > 0 {
        check_general(last)?;
    }
    map_pages(virt, pages, protection.flags())
}

/// Makes `pages` mapped pages from `virt` in the code region read-execute
/// (never writable again: W^X). `virt` must be page aligned.
pub(crate) fn make_code_executable(virt: u64, pages: u64) -> Result<(), MapError> {
    for index in 0..pages {
        let address = virt + index * PAGE_SIZE;
        if !address.is_multiple_of(PAGE_SIZE) || !(CODE_BASE..CODE_END).contains(&address) {
            return Err(MapError::OutsideRegion(address));
        }
        let page = Page::<Size4KiB>::containing_address(VirtAddr::new(address));
        with_tables(|mapper, _| {
            // SAFETY: the page belongs to the code region, which only
            // `native_code` maps and whose pages no Rust object lives in;
            // dropping the write permission (and the no-execute bit)
            // invalidates no reference.
            let flush = unsafe {
                mapper.update_flags(page, PageTableFlags::PRESENT | PageTableFlags::GLOBAL)
            }
            .map_err(|_| MapError::NotMapped(address))?;
            flush.flush();
            Ok(())
        })?;
    }
    Ok(())
}

/// Unmaps `pages` pages at `virt` in an internal region and frees their frames.
pub(crate) fn unmap_internal(virt: u64, pages: u64) {
    for index in 0..pages {
        let page = Page::containing_address(VirtAddr::new(virt + index * PAGE_SIZE));
        let _ = unmap_and_free(page);
    }
}
