//! Memory a device reads and writes by physical address (DMA): runs of
//! physically contiguous frames, reached through the physical window, and
//! the `virtio-drivers` [`Hal`] that gives that crate's drivers such
//! memory and the registers of their devices.
//!
//! A [`DmaBuffer`] owns its frames: they return to the allocator when it
//! is dropped, and nothing else maps them. While a device may write a
//! buffer, the driver holding it keeps it out of reach (see `net`), so
//! Rust never sees bytes change under a shared reference.

use core::ptr::NonNull;

use virtio_drivers::{BufferDirection, Hal, PhysAddr};

use crate::memory::{self, FRAMES, PAGE_SIZE, PHYS_OFFSET};

/// Physically contiguous, zeroed frames owned by a driver.
#[derive(Debug)]
pub struct DmaBuffer {
    physical: u64,
    pages: usize,
}

impl DmaBuffer {
    /// `pages` contiguous zeroed frames, or `None` if no such run is free.
    pub fn allocate(pages: usize) -> Option<DmaBuffer> {
        let physical = FRAMES.lock().allocate_contiguous(pages)?;
        let buffer = DmaBuffer { physical, pages };
        buffer.zero();
        Some(buffer)
    }

    /// Physical address of the first byte (what the device is given).
    pub fn physical(&self) -> u64 {
        self.physical
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.pages * PAGE_SIZE as usize
    }

    /// Whether the buffer is empty (never: a buffer has at least a page).
    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the frames are this buffer's alone (allocated for it,
        // freed only by its drop) and the window maps them; `&self` keeps
        // the buffer from being handed to a device for the borrow.
        unsafe { core::slice::from_raw_parts(self.virtual_address() as *const u8, self.len()) }
    }

    /// The bytes, to fill.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes this the only view.
        unsafe { core::slice::from_raw_parts_mut(self.virtual_address() as *mut u8, self.len()) }
    }

    fn virtual_address(&self) -> u64 {
        PHYS_OFFSET + self.physical
    }

    fn zero(&self) {
        // SAFETY: the frames are owned by this buffer and mapped by the
        // window (see `bytes`).
        unsafe { core::ptr::write_bytes(self.virtual_address() as *mut u8, 0, self.len()) };
    }

    /// Gives up ownership without freeing (the `virtio-drivers` queues
    /// keep their rings as raw addresses and free them through
    /// [`VirtioHal::dma_dealloc`]).
    fn leak(self) -> (u64, usize) {
        let parts = (self.physical, self.pages);
        core::mem::forget(self);
        parts
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        let mut frames = FRAMES.lock();
        for page in 0..self.pages as u64 {
            // Allocated by `allocate` and freed only here.
            let _ = frames.free(self.physical + page * PAGE_SIZE);
        }
    }
}

/// Whether `[address, address + len)` lies inside the physical window,
/// where a kernel address is its physical address plus `PHYS_OFFSET` and
/// contiguous virtual memory is contiguous physical memory.
fn window_physical(address: u64, len: usize) -> Option<u64> {
    let end = address.checked_add(len as u64)?;
    (address >= PHYS_OFFSET && end <= PHYS_OFFSET + memory::MAX_WINDOW_BYTES)
        .then(|| address - PHYS_OFFSET)
}

/// The `virtio-drivers` glue: DMA memory from [`DmaBuffer`], device
/// registers through the uncached window ([`memory::device_memory`]),
/// and sharing without a copy for buffers in the window (the drivers in
/// `net` only give it those); any other buffer (the heap or a stack is not
/// physically contiguous) goes through a bounce buffer.
pub(crate) struct VirtioHal;

// SAFETY: `dma_alloc` returns zeroed, page-aligned, contiguous frames no
// one else owns; `mmio_phys_to_virt` returns the uncached window address
// of device memory only (checked); `share` returns a physical address
// through which the device reaches exactly the buffer's bytes (or a bounce
// copy that `unshare` copies back and frees).
unsafe impl Hal for VirtioHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        // The queues are allocated once, when a device is brought up;
        // `net::NetDevice::probe` checks there is memory first, so running
        // out here is a broken invariant, not bad input.
        let buffer = DmaBuffer::allocate(pages).expect("no contiguous frames for a virtqueue");
        let (physical, _) = buffer.leak();
        let pointer = NonNull::new((PHYS_OFFSET + physical) as *mut u8)
            .expect("the window maps no null address");
        (physical, pointer)
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, _vaddr: NonNull<u8>, pages: usize) -> i32 {
        drop(DmaBuffer {
            physical: paddr,
            pages,
        });
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, size: usize) -> NonNull<u8> {
        // `net` checks every BAR of a device with `device_memory` before
        // handing the device to the transport.
        let virtual_address = memory::device_memory(paddr, size as u64)
            .expect("a device register range outside device memory");
        NonNull::new(virtual_address as *mut u8).expect("the window maps no null address")
    }

    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        let address = buffer.as_ptr() as *mut u8 as u64;
        let len = buffer.len();
        if let Some(physical) = window_physical(address, len) {
            return physical;
        }
        let pages = len.div_ceil(PAGE_SIZE as usize).max(1);
        let mut bounce = DmaBuffer::allocate(pages).expect("no frames for a DMA bounce buffer");
        if direction != BufferDirection::DeviceToDriver {
            // SAFETY: the caller guarantees `buffer` is valid for reads
            // and not accessed by anyone else during this call.
            let source = unsafe { buffer.as_ref() };
            bounce.bytes_mut()[..len].copy_from_slice(source);
        }
        bounce.leak().0
    }

    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, direction: BufferDirection) {
        let address = buffer.as_ptr() as *mut u8 as u64;
        let len = buffer.len();
        if window_physical(address, len).is_some() {
            return;
        }
        let bounce = DmaBuffer {
            physical: paddr,
            pages: len.div_ceil(PAGE_SIZE as usize).max(1),
        };
        if direction != BufferDirection::DriverToDevice {
            // SAFETY: the caller guarantees `buffer` is valid for writes
            // and not accessed by anyone else during this call.
            let target = unsafe { &mut *buffer.as_ptr() };
            target.copy_from_slice(&bounce.bytes()[..len]);
        }
    }
}
