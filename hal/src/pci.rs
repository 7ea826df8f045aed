//! PCI: configuration space through the legacy I/O ports (mechanism #1,
//! `0xcf8`/`0xcfc`, which every PC chipset QEMU models has, q35 included),
//! enumeration of bus 0 and the buses behind its bridges, and MSI-X
//! set-up.
//!
//! Configuration writes can move a device's registers or let it write
//! memory anywhere, so they stay inside hal: the rest of the kernel gets
//! the list of devices ([`devices`]) and the drivers hal builds on it
//! (`net`). Reads are harmless and public.

use alloc::vec::Vec;

use virtio_drivers::transport::pci::bus::{
    BarInfo, Command, ConfigurationAccess, DeviceFunction, DeviceFunctionInfo, HeaderType, PciRoot,
};
use x86_64::instructions::port::Port;

use crate::{memory, sync::IrqMutex};

/// The address port of configuration mechanism #1.
const CONFIG_ADDRESS: u16 = 0xcf8;
/// The data port of configuration mechanism #1.
const CONFIG_DATA: u16 = 0xcfc;

/// Capability id of MSI-X (PCI Local Bus 3.0, appendix H).
const CAPABILITY_MSIX: u8 = 0x11;
/// MSI-X message control: enable.
const MSIX_ENABLE: u32 = 1 << 31;
/// MSI-X message control: mask every vector of the function.
const MSIX_FUNCTION_MASK: u32 = 1 << 30;
/// The local APIC's MSI address window (Intel SDM vol. 3, 11.11.1).
const MSI_ADDRESS_BASE: u32 = 0xfee0_0000;

/// The lock around the two-step port sequence (select, then transfer).
static PORTS: IrqMutex<()> = IrqMutex::new(());

/// Configuration space through the I/O ports, as `virtio-drivers` wants it.
pub(crate) struct PortAccess;

fn select(device_function: DeviceFunction, register_offset: u8) -> u32 {
    0x8000_0000
        | (u32::from(device_function.bus) << 16)
        | (u32::from(device_function.device & 0x1f) << 11)
        | (u32::from(device_function.function & 0x7) << 8)
        | u32::from(register_offset & 0xfc)
}

impl ConfigurationAccess for PortAccess {
    fn read_word(&self, device_function: DeviceFunction, register_offset: u8) -> u32 {
        let _ports = PORTS.lock();
        // SAFETY: ports 0xcf8/0xcfc are the PC's configuration mechanism;
        // selecting a register and reading it has no side effect on memory,
        // and the lock keeps the two steps together.
        unsafe {
            Port::<u32>::new(CONFIG_ADDRESS).write(select(device_function, register_offset));
            Port::<u32>::new(CONFIG_DATA).read()
        }
    }

    fn write_word(&mut self, device_function: DeviceFunction, register_offset: u8, data: u32) {
        let _ports = PORTS.lock();
        // SAFETY: as in `read_word`; what is written is hal's own choice
        // (only hal holds a `PortAccess`), made to bring a device up.
        unsafe {
            Port::<u32>::new(CONFIG_ADDRESS).write(select(device_function, register_offset));
            Port::<u32>::new(CONFIG_DATA).write(data);
        }
    }

    unsafe fn unsafe_clone(&self) -> Self {
        PortAccess
    }
}

/// One function of a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciFunction {
    /// Bus number (0-255).
    pub bus: u8,
    /// Device number (0-31).
    pub device: u8,
    /// Function number (0-7).
    pub function: u8,
    /// Vendor id.
    pub vendor_id: u16,
    /// Device id.
    pub device_id: u16,
    /// Class code.
    pub class: u8,
    /// Subclass code.
    pub subclass: u8,
}

/// The root complex, as `virtio-drivers` reaches it.
pub(crate) fn root() -> PciRoot<PortAccess> {
    PciRoot::new(PortAccess)
}

/// Configuration register of a PCI-to-PCI bridge holding its primary,
/// secondary and subordinate bus numbers (PCI-to-PCI Bridge spec. 3.2).
const BRIDGE_BUS_NUMBERS: u8 = 0x18;

/// Every function of every bus reachable from bus 0, bus 0 first: the
/// buses behind PCI-to-PCI bridges are followed through the secondary
/// bus numbers the firmware gave them (SeaBIOS numbers them; a bridge
/// left unnumbered, or pointing back, is skipped). Each bridge on the way
/// gets memory decoding and bus mastering on, so that its devices'
/// registers and MSI writes pass it.
pub(crate) fn all_functions(
    root: &mut PciRoot<PortAccess>,
) -> Vec<(DeviceFunction, DeviceFunctionInfo)> {
    let mut found = Vec::new();
    let mut visited = [false; 256];
    let mut buses = alloc::collections::VecDeque::from([0u8]);
    visited[0] = true;
    while let Some(bus) = buses.pop_front() {
        let functions: Vec<_> = root.enumerate_bus(bus).collect();
        for (address, info) in functions {
            if info.header_type == HeaderType::PciPciBridge {
                let numbers = PortAccess.read_word(address, BRIDGE_BUS_NUMBERS);
                let secondary = ((numbers >> 8) & 0xff) as u8;
                if secondary > bus && !visited[usize::from(secondary)] {
                    visited[usize::from(secondary)] = true;
                    let (_, command) = root.get_status_command(address);
                    root.set_command(
                        address,
                        command | Command::BUS_MASTER | Command::MEMORY_SPACE,
                    );
                    buses.push_back(secondary);
                }
            }
            found.push((address, info));
        }
    }
    found
}

/// Every function of every bus (see [`all_functions`]).
pub fn devices() -> Vec<PciFunction> {
    all_functions(&mut root())
        .into_iter()
        .map(
            |(address, info): (DeviceFunction, DeviceFunctionInfo)| PciFunction {
                bus: address.bus,
                device: address.device,
                function: address.function,
                vendor_id: info.vendor_id,
                device_id: info.device_id,
                class: info.class,
                subclass: info.subclass,
            },
        )
        .collect()
}

/// Why a device was not brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciError {
    /// A memory BAR lies outside device memory below 4 GiB (the window
    /// maps it uncached only there), or could not be read.
    BarOutsideDeviceMemory,
    /// The function has no MSI-X capability (or its table is unusable).
    NoMsix,
}

impl core::fmt::Display for PciError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            PciError::BarOutsideDeviceMemory => {
                "a register window (BAR) lies outside device memory below 4 GiB"
            }
            PciError::NoMsix => "the device has no usable MSI-X table",
        })
    }
}

/// A function's memory BARs as (physical, window) addresses, `None` for
/// BARs that are absent or not memory.
pub(crate) type MemoryBars = [Option<(u64, u64)>; 6];

/// Reads (and sizes) the memory BARs of `function` and checks that each
/// lies in device memory the window maps uncached, so that register
/// pointers made from them are valid. Sizing briefly turns the device's
/// decoding off: call it before the device is in use.
pub(crate) fn memory_bars(
    root: &mut PciRoot<PortAccess>,
    function: DeviceFunction,
) -> Result<MemoryBars, PciError> {
    let mut bars = [None; 6];
    let mut index = 0;
    while index < 6 {
        let info = root
            .bar_info(function, index)
            .map_err(|_| PciError::BarOutsideDeviceMemory)?;
        let wide = matches!(info, Some(ref info) if info.takes_two_entries());
        if let Some(BarInfo::Memory { address, size, .. }) = info {
            if size > 0 {
                let window =
                    memory::device_memory(address, size).ok_or(PciError::BarOutsideDeviceMemory)?;
                bars[index as usize] = Some((address, window));
            }
        }
        index += if wide { 2 } else { 1 };
    }
    Ok(bars)
}

/// Points MSI-X table entry `entry` of `function` at `vector` on the local
/// APIC `apic_id` and enables MSI-X (unmasked).
pub(crate) fn enable_msix(
    root: &mut PciRoot<PortAccess>,
    function: DeviceFunction,
    bars: &MemoryBars,
    entry: u16,
    vector: u8,
    apic_id: u8,
) -> Result<(), PciError> {
    let capability = root
        .capabilities(function)
        .find(|capability| capability.id == CAPABILITY_MSIX)
        .ok_or(PciError::NoMsix)?;
    let table_size = (capability.private_header & 0x7ff) + 1;
    if entry >= table_size {
        return Err(PciError::NoMsix);
    }
    let table = PortAccess.read_word(function, capability.offset + 4);
    let (bir, offset) = ((table & 0x7) as u8, u64::from(table & !0x7));
    let (physical, _) = bars
        .get(usize::from(bir))
        .copied()
        .flatten()
        .ok_or(PciError::NoMsix)?;
    // The entry must lie inside device memory the window maps.
    let entry_address = memory::device_memory(physical + offset + u64::from(entry) * 16, 16)
        .ok_or(PciError::NoMsix)?;
    let words = [
        MSI_ADDRESS_BASE | (u32::from(apic_id) << 12),
        0,
        u32::from(vector),
        0,
    ];
    for (index, word) in words.iter().enumerate() {
        // SAFETY: `entry_address` is inside the device's MSI-X table, in
        // device memory the window maps uncached (checked above); the
        // words are the entry's address, upper address, data (fixed
        // delivery, edge) and vector control (unmasked).
        unsafe { core::ptr::write_volatile((entry_address + index as u64 * 4) as *mut u32, *word) };
    }
    // An MSI is a memory write by the device: it needs bus mastering
    // (QEMU drops it otherwise, even where its DMA goes through).
    let (_, command) = root.get_status_command(function);
    root.set_command(
        function,
        command | Command::BUS_MASTER | Command::MEMORY_SPACE,
    );
    let control = PortAccess.read_word(function, capability.offset);
    PortAccess.write_word(
        function,
        capability.offset,
        (control | MSIX_ENABLE) & !MSIX_FUNCTION_MASK,
    );
    Ok(())
}
