//! Loading static ELF64 executables into a user address space.
//!
//! The file is untrusted: `object` reads it with checked bounds, and every
//! value that places memory (segment addresses and sizes, the entry point)
//! is checked here before anything is mapped. A bad file is a clear error,
//! never a panic. Supported: x86-64 `ET_EXEC` files (static, not
//! position-independent, as `musl-gcc -static` makes them) with no
//! interpreter; each `PT_LOAD` segment is mapped with its own permissions
//! (W^X: a segment both writable and executable is refused).

use alloc::{format, string::String, vec::Vec};

use hal::{
    address_space::{AddressSpace, UserProtection},
    memory::{MapError, PAGE_SIZE},
};
use object::{
    elf::{self, FileHeader64},
    read::elf::{FileHeader, ProgramHeader},
    LittleEndian,
};

/// Segments may not reach above this (the stack lives higher).
const LOAD_LIMIT: u64 = 0x0000_7000_0000_0000;
/// Largest total of mapped segment memory accepted.
const MAX_IMAGE_BYTES: u64 = 256 << 20;

/// What the loader placed.
pub struct Image {
    /// The address space holding the segments.
    pub space: AddressSpace,
    /// Where things are in it.
    pub layout: Layout,
}

/// Where the loader put the program.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The loaded segments: first page, end of the last page, protection
    /// (the regions of the program's address map).
    pub segments: Vec<(u64, u64, UserProtection)>,
    /// The first page above every segment (where the break starts).
    pub image_end: u64,
    /// The entry point.
    pub entry: u64,
    /// Where the program headers are in the image (for `AT_PHDR`), if
    /// inside a loaded segment.
    pub program_headers: Option<u64>,
    /// Number of program headers (`AT_PHNUM`).
    pub program_header_count: u64,
}

fn mapping_error(error: MapError) -> String {
    match error {
        MapError::OutOfFrames => String::from("out of memory"),
        MapError::AlreadyMapped(at) => format!("page {at:#x} mapped twice"),
        MapError::OutsideRegion(at) | MapError::Unaligned(at) | MapError::NotMapped(at) => {
            format!("bad address {at:#x}")
        }
    }
}

/// Reads `bytes` as an executable and maps its segments into a new address
/// space.
pub fn load(bytes: &[u8]) -> Result<Image, String> {
    let header = FileHeader64::<LittleEndian>::parse(bytes)
        .map_err(|error| format!("not an ELF64 file: {error}"))?;
    let endian = header
        .endian()
        .map_err(|_| String::from("not a little-endian ELF file"))?;
    if header.e_machine(endian) != elf::EM_X86_64 {
        return Err(format!(
            "built for machine {}, not x86-64",
            header.e_machine(endian)
        ));
    }
    if header.e_type(endian) != elf::ET_EXEC {
        return Err(String::from(
            "not a static executable (position-independent and shared files are not supported yet)",
        ));
    }
    let segments = header
        .program_headers(endian, bytes)
        .map_err(|error| format!("bad program headers: {error}"))?;
    let entry = header.e_entry(endian);
    let program_header_offset = header.e_phoff(endian);

    let space = AddressSpace::new().map_err(mapping_error)?;
    let mut total = 0u64;
    let mut entry_is_executable = false;
    let mut program_headers = None;
    let mut placed: Vec<(u64, u64, UserProtection)> = Vec::new();
    for segment in segments {
        match segment.p_type(endian) {
            elf::PT_LOAD => {}
            elf::PT_INTERP => {
                return Err(String::from(
                    "dynamically linked (PT_INTERP): not supported yet",
                ))
            }
            _ => continue,
        }
        let address = segment.p_vaddr(endian);
        let memory_size = segment.p_memsz(endian);
        let file_size = segment.p_filesz(endian);
        let flags = segment.p_flags(endian);
        let segment_end = address
            .checked_add(memory_size)
            .filter(|&end| end <= LOAD_LIMIT)
            .ok_or_else(|| format!("segment at {address:#x} reaches outside user memory"))?;
        if file_size > memory_size {
            return Err(format!(
                "segment at {address:#x} has more file bytes than memory"
            ));
        }
        total = total.saturating_add(memory_size);
        if total > MAX_IMAGE_BYTES {
            return Err(String::from("segments larger than 256 MiB in all"));
        }
        let (writable, executable) = (flags & elf::PF_W != 0, flags & elf::PF_X != 0);
        let protection = match (writable, executable) {
            (true, true) => {
                return Err(format!(
                    "segment at {address:#x} is both writable and executable"
                ))
            }
            (true, false) => UserProtection::ReadWrite,
            (false, true) => UserProtection::ReadExecute,
            (false, false) => UserProtection::Read,
        };
        let data = segment
            .data(endian, bytes)
            .map_err(|_| format!("segment at {address:#x} lies outside the file"))?;
        let first_page = address - address % PAGE_SIZE;
        let mut page = first_page;
        while page < segment_end {
            match space.map(page, protection) {
                // A page shared with the previous segment keeps its first
                // protection (linkers align segments to pages; musl's do).
                Ok(()) | Err(MapError::AlreadyMapped(_)) => {}
                Err(error) => return Err(mapping_error(error)),
            }
            page += PAGE_SIZE;
        }
        space.write(address, data).map_err(mapping_error)?;
        // A page shared with the previous segment stays in that region.
        let region_start = placed
            .last()
            .map_or(first_page, |&(_, end, _)| first_page.max(end));
        let region_end = segment_end.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        if region_start < region_end {
            placed.push((region_start, region_end, protection));
        }
        if executable && (address..segment_end).contains(&entry) {
            entry_is_executable = true;
        }
        let file_offset = segment.p_offset(endian);
        if (file_offset..file_offset + file_size).contains(&program_header_offset) {
            program_headers = Some(address + (program_header_offset - file_offset));
        }
    }
    if !entry_is_executable {
        return Err(format!(
            "entry point {entry:#x} is not in an executable segment"
        ));
    }
    let image_end = placed.iter().map(|&(_, end, _)| end).max().unwrap_or(0);
    Ok(Image {
        space,
        layout: Layout {
            segments: placed,
            image_end,
            entry,
            program_headers,
            program_header_count: u64::from(header.e_phnum(endian)),
        },
    })
}

/// The auxiliary-vector keys the initial stack carries.
mod auxv {
    pub const NULL: u64 = 0;
    pub const PHDR: u64 = 3;
    pub const PHENT: u64 = 4;
    pub const PHNUM: u64 = 5;
    pub const PAGESZ: u64 = 6;
    pub const ENTRY: u64 = 9;
    pub const RANDOM: u64 = 25;
}

/// Builds the System V initial stack (argc, argv, envp, auxiliary vector,
/// and the strings they point to) ending below `top`; returns the stack
/// pointer to start with (16-byte aligned, pointing at argc).
/// The strings are bytes, as Linux passes them (`execve`'s `argv` and
/// `envp`).
pub fn initial_stack_with_environment(
    space: &AddressSpace,
    top: u64,
    image: &Layout,
    arguments: &[&[u8]],
    environment: &[&[u8]],
) -> Result<u64, String> {
    // Strings and the 16 random bytes at the top, then the vectors.
    let mut cursor = top;
    let mut place = |string: &[u8]| -> Result<u64, String> {
        let mut bytes = Vec::from(string);
        bytes.push(0);
        cursor -= bytes.len() as u64;
        space.write(cursor, &bytes).map_err(mapping_error)?;
        Ok(cursor)
    };
    let mut argv = Vec::with_capacity(arguments.len());
    for argument in arguments {
        argv.push(place(argument)?);
    }
    let mut envp = Vec::with_capacity(environment.len());
    for variable in environment {
        envp.push(place(variable)?);
    }
    cursor -= 16;
    let random = cursor;
    let seed = hal::cpu::read_tsc();
    let mut random_bytes = [0u8; 16];
    random_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    random_bytes[8..].copy_from_slice(&seed.rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    space.write(random, &random_bytes).map_err(mapping_error)?;

    let mut words: Vec<u64> = Vec::new();
    words.push(arguments.len() as u64);
    words.extend(&argv);
    words.push(0); // end of argv
    words.extend(&envp);
    words.push(0); // end of the environment
    if let Some(program_headers) = image.program_headers {
        words.extend([auxv::PHDR, program_headers]);
        words.extend([auxv::PHENT, core::mem::size_of::<elf::ProgramHeader64<LittleEndian>>() as u64]);
        words.extend([auxv::PHNUM, image.program_header_count]);
    }
    words.extend([auxv::PAGESZ, PAGE_SIZE]);
    words.extend([auxv::ENTRY, image.entry]);
    words.extend([auxv::RANDOM, random]);
    words.extend([auxv::NULL, 0]);
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let rsp = (cursor - bytes.len() as u64) & !0xf;
    space.write(rsp, &bytes).map_err(mapping_error)?;
    Ok(rsp)
}
