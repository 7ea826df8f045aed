//! Loading ELF64 executables into a user address space, as Linux's
//! `binfmt_elf` does.
//!
//! The files are untrusted: `object` reads them with checked bounds, and
//! every value that places memory (segment addresses and sizes, the entry
//! point, the interpreter's path) is checked here before anything is
//! mapped. A bad file is a clear error, never a panic.
//!
//! What is loaded:
//! - `ET_EXEC` programs at their own addresses (static, as `musl-gcc
//!   -static` and Debian's `bash-static` are built);
//! - `ET_DYN` programs (position-independent: Debian's programs, and
//!   static-PIE ones) at [`PROGRAM_BASE`];
//! - a program with `PT_INTERP` (dynamically linked) together with its
//!   interpreter, Debian's `ld-linux-x86-64.so.2`, an `ET_DYN` file placed
//!   at [`INTERPRETER_BASE`]. The thread starts in the interpreter, which
//!   finds the program through the auxiliary vector ([`initial_stack`])
//!   and maps its libraries itself, with `mmap` on their files.
//!
//! Each `PT_LOAD` segment is mapped with its own permissions, writable
//! and executable together if the file asks, as Linux maps it; the
//! program's `PT_GNU_STACK` says whether its stack is executable
//! ([`Layout::executable_stack`]). Neither base is
//! randomized; there is no vDSO. Segments of files the boot archive lends
//! are mapped through the page cache (`services/pagecache`), so every
//! process running a program shares its read-only pages.
#![no_std]

extern crate alloc;

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
use pagecache::PageCache;

/// Where a position-independent program's lowest segment is placed
/// (Linux puts them near two thirds of the user half too:
/// `ELF_ET_DYN_BASE`). The break follows the program.
pub const PROGRAM_BASE: u64 = 0x5555_5555_4000;
/// Where the interpreter (`ld.so`) is placed: above `mmap`'s ceiling
/// (`vm::MMAP_CEILING`), so the mappings it makes go below it, and far
/// below the stack.
pub const INTERPRETER_BASE: u64 = 0x7f00_0000_0000;
/// An `ET_EXEC` program's segments stay below this, clear of the
/// interpreter and of the stack.
const EXEC_LIMIT: u64 = 0x7000_0000_0000;
/// The interpreter's segments stay below this (the stack region's
/// bottom is far higher).
const INTERPRETER_LIMIT: u64 = INTERPRETER_BASE + (1 << 32);
/// Largest total of mapped segment memory accepted, per file.
const MAX_IMAGE_BYTES: u64 = 256 << 20;
/// Longest interpreter path (`PATH_MAX`).
const MAX_INTERPRETER_PATH: usize = 4096;

/// Why a program could not be loaded.
#[derive(Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The file is not a program this loader runs, and why (`ENOEXEC`).
    NotExecutable(String),
    /// No memory for its pages or page tables (`ENOMEM`).
    NoMemory,
}

impl core::fmt::Display for LoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LoadError::NotExecutable(why) => f.write_str(why),
            LoadError::NoMemory => f.write_str("out of memory"),
        }
    }
}

impl From<LoadError> for String {
    fn from(error: LoadError) -> String {
        format!("{error}")
    }
}

fn not_executable(why: impl Into<String>) -> LoadError {
    LoadError::NotExecutable(why.into())
}

fn mapping_error(error: MapError) -> LoadError {
    match error {
        MapError::OutOfFrames => LoadError::NoMemory,
        MapError::AlreadyMapped(at) => not_executable(format!("page {at:#x} mapped twice")),
        MapError::OutsideRegion(at)
        | MapError::Unaligned(at)
        | MapError::NotMapped(at)
        | MapError::SharedFrame(at) => not_executable(format!("bad address {at:#x}")),
    }
}

/// What the loader placed.
pub struct Image {
    /// The address space holding the segments.
    pub space: AddressSpace,
    /// Where things are in it.
    pub layout: Layout,
}

/// One loaded segment: a region of the program's address map.
#[derive(Clone, Copy)]
pub struct Segment {
    /// Its first page.
    pub start: u64,
    /// The end of its last page.
    pub end: u64,
    /// How the program may access it.
    pub protection: UserProtection,
    /// The page of its file at `start` (what `/proc/PID/maps` shows as
    /// the offset).
    pub file_page: u64,
    /// Whether it is the interpreter's rather than the program's.
    pub of_interpreter: bool,
}

/// Where the loader put the program (and its interpreter).
#[derive(Clone)]
pub struct Layout {
    /// The loaded segments of both files, lowest first in each.
    pub segments: Vec<Segment>,
    /// The first page above the program's segments (where the break
    /// starts).
    pub image_end: u64,
    /// Where the thread starts: the interpreter's entry point if there is
    /// one, else the program's.
    pub entry: u64,
    /// The program's own entry point (`AT_ENTRY`).
    pub program_entry: u64,
    /// Where the program's headers are in memory (`AT_PHDR`), if inside a
    /// loaded segment.
    pub program_headers: Option<u64>,
    /// Number of program headers (`AT_PHNUM`).
    pub program_header_count: u64,
    /// Where the interpreter was placed (`AT_BASE`); 0 without one.
    pub interpreter_base: u64,
    /// Whether the program's `PT_GNU_STACK` asks for an executable stack
    /// (without one, an x86-64 stack is not executable, as on Linux).
    pub executable_stack: bool,
}

/// A file's bytes, as the loader is given them.
#[derive(Clone, Copy)]
pub enum FileBytes<'a> {
    /// Lent by a file whose bytes never change while it lends them (a
    /// boot-archive file: `vfs::Inode::borrowed_contents`): whole pages
    /// of its segments are mapped from the page cache, shared by every
    /// process that runs the file, instead of copied.
    Lent(&'static [u8]),
    /// Any other bytes: copied into the process's own pages.
    Copied(&'a [u8]),
}

impl<'a> FileBytes<'a> {
    /// The bytes.
    pub fn bytes(self) -> &'a [u8] {
        match self {
            FileBytes::Lent(bytes) => bytes,
            FileBytes::Copied(bytes) => bytes,
        }
    }

    /// The bytes of a file read for `execve`: lent if the file system
    /// lent them.
    // A `&[u8]` would lose which of the two the bytes are: the whole point.
    #[allow(clippy::ptr_arg)]
    pub fn of(file: &'a alloc::borrow::Cow<'static, [u8]>) -> Self {
        match file {
            alloc::borrow::Cow::Borrowed(bytes) => FileBytes::Lent(bytes),
            alloc::borrow::Cow::Owned(bytes) => FileBytes::Copied(bytes),
        }
    }
}

/// A file's header, checked: a little-endian x86-64 ELF64 of a type this
/// loader runs.
struct Parsed<'a> {
    bytes: &'a [u8],
    /// The same bytes, if they may be shared through the page cache.
    lent: Option<&'static [u8]>,
    header: &'a FileHeader64<LittleEndian>,
    endian: LittleEndian,
    /// `ET_DYN` (placed at a base) rather than `ET_EXEC`.
    is_position_independent: bool,
}

fn parse(file: FileBytes<'_>) -> Result<Parsed<'_>, LoadError> {
    let bytes = file.bytes();
    let lent = match file {
        FileBytes::Lent(bytes) => Some(bytes),
        FileBytes::Copied(_) => None,
    };
    let header = FileHeader64::<LittleEndian>::parse(bytes)
        .map_err(|error| not_executable(format!("not an ELF64 file: {error}")))?;
    let endian = header
        .endian()
        .map_err(|_| not_executable("not a little-endian ELF file"))?;
    if header.e_machine(endian) != elf::EM_X86_64 {
        return Err(not_executable(format!(
            "built for machine {}, not x86-64",
            header.e_machine(endian)
        )));
    }
    let is_position_independent = match header.e_type(endian) {
        elf::ET_EXEC => false,
        elf::ET_DYN => true,
        other => return Err(not_executable(format!("ELF type {other} is not a program"))),
    };
    Ok(Parsed {
        bytes,
        lent,
        header,
        endian,
        is_position_independent,
    })
}

impl<'a> Parsed<'a> {
    fn segments(&self) -> Result<&'a [elf::ProgramHeader64<LittleEndian>], LoadError> {
        self.header
            .program_headers(self.endian, self.bytes)
            .map_err(|error| not_executable(format!("bad program headers: {error}")))
    }
}

/// The interpreter a program asks for (its `PT_INTERP` path, without the
/// terminating NUL), or `None` for a program that needs none.
pub fn interpreter_path(bytes: &[u8]) -> Result<Option<Vec<u8>>, LoadError> {
    let parsed = parse(FileBytes::Copied(bytes))?;
    let mut found = None;
    for segment in parsed.segments()? {
        if segment.p_type(parsed.endian) != elf::PT_INTERP {
            continue;
        }
        if found.is_some() {
            return Err(not_executable("more than one interpreter (PT_INTERP)"));
        }
        let data = segment
            .data(parsed.endian, bytes)
            .map_err(|_| not_executable("the interpreter's path lies outside the file"))?;
        // The path ends at its NUL, which must be there.
        let path = data
            .iter()
            .position(|&byte| byte == 0)
            .map(|end| &data[..end])
            .ok_or_else(|| not_executable("the interpreter's path is not terminated"))?;
        if path.is_empty() || path.len() > MAX_INTERPRETER_PATH {
            return Err(not_executable(
                "the interpreter's path is empty or too long",
            ));
        }
        found = Some(Vec::from(path));
    }
    Ok(found)
}

/// Maps `program` (and `interpreter`, the file its `PT_INTERP` names,
/// which the caller read) into a new address space. A program that asks
/// for an interpreter must be given one, and one that does not must not.
/// Lent files' read-only pages come from `cache`.
pub fn load(
    cache: &PageCache,
    program: FileBytes<'_>,
    interpreter: Option<FileBytes<'_>>,
) -> Result<Image, LoadError> {
    let parsed = parse(program)?;
    match (interpreter_path(program.bytes())?, interpreter) {
        (Some(_), None) => {
            return Err(not_executable(
                "dynamically linked (PT_INTERP): its interpreter must be loaded with it",
            ))
        }
        (None, Some(_)) => return Err(not_executable("a static program given an interpreter")),
        _ => {}
    }
    let space = AddressSpace::new().map_err(mapping_error)?;
    let mut segments = Vec::new();
    let (program_base, program_limit) = if parsed.is_position_independent {
        (PROGRAM_BASE, INTERPRETER_BASE)
    } else {
        (0, EXEC_LIMIT)
    };
    let main = place(
        cache,
        &space,
        &parsed,
        program_base,
        program_limit,
        &mut segments,
    )?;
    let (entry, interpreter_base) = match interpreter {
        Some(bytes) => {
            let interpreter = parse(bytes)
                .map_err(|error| not_executable(format!("the interpreter: {error}")))?;
            if !interpreter.is_position_independent {
                return Err(not_executable(
                    "the interpreter is not position-independent (ET_DYN)",
                ));
            }
            if interpreter_path(bytes.bytes())?.is_some() {
                return Err(not_executable("the interpreter asks for an interpreter"));
            }
            let placed = place(
                cache,
                &space,
                &interpreter,
                INTERPRETER_BASE,
                INTERPRETER_LIMIT,
                &mut segments,
            )
            .map_err(|error| match error {
                LoadError::NotExecutable(why) => not_executable(format!("the interpreter: {why}")),
                other => other,
            })?;
            (placed.entry, placed.base)
        }
        None => (main.entry, 0),
    };
    Ok(Image {
        space,
        layout: Layout {
            segments,
            image_end: main.end,
            entry,
            program_entry: main.entry,
            program_headers: main.program_headers,
            program_header_count: u64::from(parsed.header.e_phnum(parsed.endian)),
            interpreter_base,
            executable_stack: asks_for_executable_stack(&parsed),
        },
    })
}

/// Whether the file's `PT_GNU_STACK` header has `PF_X`.
fn asks_for_executable_stack(parsed: &Parsed<'_>) -> bool {
    parsed.segments().is_ok_and(|headers| {
        headers
            .iter()
            .find(|header| header.p_type(parsed.endian) == elf::PT_GNU_STACK)
            .is_some_and(|header| header.p_flags(parsed.endian) & elf::PF_X != 0)
    })
}

/// Where one file's segments went.
struct Placed {
    /// What was added to its virtual addresses (0 for `ET_EXEC`).
    base: u64,
    /// The first page above its segments.
    end: u64,
    /// Its entry point, in memory.
    entry: u64,
    /// Its program headers, in memory.
    program_headers: Option<u64>,
}

fn page_down(address: u64) -> u64 {
    address - address % PAGE_SIZE
}

/// Maps the `PT_LOAD` segments of `file` into `space`: an `ET_DYN` file
/// with its lowest segment at `base`, an `ET_EXEC` file where it says;
/// every segment between `vm::MMAP_MIN_ADDRESS` and `limit`, lent pages
/// through `cache`. Adds each segment's pages to `segments`.
fn place(
    cache: &PageCache,
    space: &AddressSpace,
    file: &Parsed<'_>,
    base: u64,
    limit: u64,
    segments: &mut Vec<Segment>,
) -> Result<Placed, LoadError> {
    let endian = file.endian;
    let headers = file.segments()?;
    let loads = || {
        headers
            .iter()
            .filter(|segment| segment.p_type(endian) == elf::PT_LOAD)
    };
    // ELF lists loadable segments in ascending order (System V ABI, ch. 5).
    let lowest = loads()
        .map(|segment| segment.p_vaddr(endian))
        .next()
        .ok_or_else(|| not_executable("no loadable segment"))?;
    let bias = if file.is_position_independent {
        base.wrapping_sub(page_down(lowest))
    } else {
        0
    };
    let entry = file.header.e_entry(endian).wrapping_add(bias);
    let program_header_offset = file.header.e_phoff(endian);
    let mut total = 0u64;
    let mut entry_is_executable = false;
    let mut program_headers = None;
    let mut previous_end = 0u64;
    let first_segment = segments.len();
    let all: Vec<&elf::ProgramHeader64<LittleEndian>> = loads().collect();
    for (index, segment) in all.iter().enumerate() {
        // Where the next segment starts (its first page may be this
        // segment's last), if it is placed sensibly; checked when its turn
        // comes.
        let next_address = all
            .get(index + 1)
            .and_then(|next| next.p_vaddr(endian).checked_add(bias));
        let virtual_address = segment.p_vaddr(endian);
        let memory_size = segment.p_memsz(endian);
        let file_size = segment.p_filesz(endian);
        let flags = segment.p_flags(endian);
        let address = virtual_address
            .checked_add(bias)
            .filter(|&address| address >= vm::MMAP_MIN_ADDRESS && address >= previous_end)
            .ok_or_else(|| {
                not_executable(format!(
                    "segment at {virtual_address:#x} is out of order or below the lowest address allowed"
                ))
            })?;
        let segment_end = address
            .checked_add(memory_size)
            .filter(|&end| end <= limit)
            .ok_or_else(|| {
                not_executable(format!(
                    "segment at {address:#x} reaches outside user memory"
                ))
            })?;
        previous_end = segment_end;
        if file_size > memory_size {
            return Err(not_executable(format!(
                "segment at {address:#x} has more file bytes than memory"
            )));
        }
        total = total.saturating_add(memory_size);
        if total > MAX_IMAGE_BYTES {
            return Err(not_executable("segments larger than 256 MiB in all"));
        }
        let (writable, executable) = (flags & elf::PF_W != 0, flags & elf::PF_X != 0);
        let protection = match (writable, executable) {
            (true, true) => UserProtection::ReadWriteExecute,
            (true, false) => UserProtection::ReadWrite,
            (false, true) => UserProtection::ReadExecute,
            (false, false) => UserProtection::Read,
        };
        // The segment's file bytes must be in the file.
        segment.data(endian, file.bytes).map_err(|_| {
            not_executable(format!("segment at {address:#x} lies outside the file"))
        })?;
        let first_page = page_down(address);
        let file_offset = segment.p_offset(endian);
        // The previous segment's pages end here; a page below is shared
        // with it (linkers align segments to pages; musl's do) and keeps
        // its first protection.
        let previous_pages_end = segments[first_segment..]
            .last()
            .map_or(0, |segment| segment.end);
        let first_page_is_new = first_page >= previous_pages_end;
        // Linux maps whole pages of the file: the bytes before the segment
        // in its first page are the file's too, when the file offset and
        // the address agree within a page.
        let congruent = file_offset % PAGE_SIZE == address % PAGE_SIZE;
        let file_backed_start =
            if first_page_is_new && congruent && file_offset >= address - first_page {
                first_page
            } else {
                address
            };
        let file_end = address + file_size;
        // Pages wholly of the file's bytes, shared with no other segment,
        // come from the page cache when the file lends its bytes: mapped
        // read-only (a writable segment's page is copied on its first
        // write, as after fork).
        let (shared_start, shared_end) = match file.lent {
            Some(_) if congruent && file_backed_start == first_page => {
                let end = page_down(file_end).min(next_address.map_or(u64::MAX, page_down));
                (first_page, end.max(first_page))
            }
            _ => (first_page, first_page),
        };
        if let Some(lent) = file.lent.filter(|_| shared_end > shared_start) {
            let first_file_page = ((file_offset - (address - first_page)) / PAGE_SIZE) as usize;
            let count = ((shared_end - shared_start) / PAGE_SIZE) as usize;
            let shared_protection = if writable {
                UserProtection::Read
            } else {
                protection
            };
            cache
                .map(
                    space,
                    lent,
                    first_file_page,
                    shared_start,
                    count,
                    shared_protection,
                )
                .map_err(|error| match error {
                    pagecache::CacheError::Map(error) => mapping_error(error),
                    other => not_executable(format!("segment at {address:#x}: {other}")),
                })?;
        }
        // Every other page is the process's own: zeroed, then given the
        // file's bytes that fall in it.
        let mut page = first_page;
        while page < segment_end {
            if (shared_start..shared_end).contains(&page) {
                page = shared_end;
                continue;
            }
            if page >= previous_pages_end {
                space.map(page, protection).map_err(mapping_error)?;
            }
            let from = page.max(file_backed_start);
            let to = (page + PAGE_SIZE).min(file_end);
            if from < to {
                let offset = file_offset
                    .checked_add(from)
                    .and_then(|at| at.checked_sub(address))
                    .ok_or_else(|| {
                        not_executable(format!("segment at {address:#x} lies outside the file"))
                    })?;
                let bytes = usize::try_from(offset)
                    .ok()
                    .and_then(|offset| file.bytes.get(offset..))
                    .and_then(|rest| rest.get(..(to - from) as usize))
                    .ok_or_else(|| {
                        not_executable(format!("segment at {address:#x} lies outside the file"))
                    })?;
                space.write(from, bytes).map_err(mapping_error)?;
            }
            page += PAGE_SIZE;
        }
        // A page shared with the previous segment stays in that region.
        let region_start = segments[first_segment..]
            .last()
            .map_or(first_page, |segment| first_page.max(segment.end));
        let region_end = segment_end.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        if region_start < region_end {
            segments.push(Segment {
                start: region_start,
                end: region_end,
                protection,
                file_page: file_offset
                    .saturating_add(region_start)
                    .saturating_sub(address)
                    / PAGE_SIZE,
                of_interpreter: base == INTERPRETER_BASE,
            });
        }
        if executable && (address..segment_end).contains(&entry) {
            entry_is_executable = true;
        }
        if (file_offset..file_offset.saturating_add(file_size)).contains(&program_header_offset) {
            program_headers = Some(address + (program_header_offset - file_offset));
        }
    }
    if !entry_is_executable {
        return Err(not_executable(format!(
            "entry point {entry:#x} is not in an executable segment"
        )));
    }
    let end = segments[first_segment..]
        .iter()
        .map(|segment| segment.end)
        .max()
        .unwrap_or(base);
    Ok(Placed {
        base: bias,
        end,
        entry,
        program_headers,
    })
}

/// The auxiliary-vector keys the initial stack carries (Linux's
/// `include/uapi/linux/auxvec.h`), what glibc's `ld.so` and libc read.
mod auxv {
    pub const NULL: u64 = 0;
    pub const PHDR: u64 = 3;
    pub const PHENT: u64 = 4;
    pub const PHNUM: u64 = 5;
    pub const PAGESZ: u64 = 6;
    pub const BASE: u64 = 7;
    pub const FLAGS: u64 = 8;
    pub const ENTRY: u64 = 9;
    pub const UID: u64 = 11;
    pub const EUID: u64 = 12;
    pub const GID: u64 = 13;
    pub const EGID: u64 = 14;
    pub const PLATFORM: u64 = 15;
    pub const HWCAP: u64 = 16;
    pub const CLKTCK: u64 = 17;
    pub const SECURE: u64 = 23;
    pub const RANDOM: u64 = 25;
    pub const HWCAP2: u64 = 26;
    pub const EXECFN: u64 = 31;
}

/// Clock ticks per second that `times` counts in (`AT_CLKTCK`, Linux's
/// `USER_HZ`).
const CLOCK_TICKS_PER_SECOND: u64 = 100;
/// What `AT_PLATFORM` names.
const PLATFORM: &[u8] = b"x86_64";

/// What the initial stack tells the program besides its arguments and
/// environment.
pub struct StartInfo<'a> {
    /// The path the program was started by (`AT_EXECFN`).
    pub path: &'a [u8],
    /// 16 random bytes (`AT_RANDOM`: glibc seeds its stack protector and
    /// pointer guard from them).
    pub random: [u8; 16],
}

/// Builds the System V initial stack (argc, argv, envp, auxiliary vector,
/// and the strings they point to) ending below `top`; returns the stack
/// pointer to start with (16-byte aligned, pointing at argc).
/// The strings are bytes, as Linux passes them (`execve`'s `argv` and
/// `envp`). Every process is root, so the ids are 0 and `AT_SECURE` is 0.
pub fn initial_stack(
    space: &AddressSpace,
    top: u64,
    image: &Layout,
    arguments: &[&[u8]],
    environment: &[&[u8]],
    start: &StartInfo<'_>,
) -> Result<u64, LoadError> {
    // The strings and the random bytes at the top, then the vectors.
    let mut cursor = top;
    let mut place = |bytes: &[u8], terminated: bool| -> Result<u64, LoadError> {
        let length = bytes.len() as u64 + u64::from(terminated);
        cursor = cursor
            .checked_sub(length)
            .ok_or_else(|| not_executable("arguments too large"))?;
        space.write(cursor, bytes).map_err(mapping_error)?;
        if terminated {
            space
                .write(cursor + bytes.len() as u64, &[0])
                .map_err(mapping_error)?;
        }
        Ok(cursor)
    };
    let execfn = place(start.path, true)?;
    let mut argv = Vec::with_capacity(arguments.len());
    for argument in arguments {
        argv.push(place(argument, true)?);
    }
    let mut envp = Vec::with_capacity(environment.len());
    for variable in environment {
        envp.push(place(variable, true)?);
    }
    let platform = place(PLATFORM, true)?;
    let random = place(&start.random, false)?;

    let mut words: Vec<u64> = Vec::new();
    words.push(arguments.len() as u64);
    words.extend(&argv);
    words.push(0); // end of argv
    words.extend(&envp);
    words.push(0); // end of the environment
                   // CPUID leaf 1's EDX, as Linux's `ELF_HWCAP` is.
    let hardware_capabilities = u64::from(core::arch::x86_64::__cpuid(1).edx);
    words.extend([auxv::HWCAP, hardware_capabilities]);
    words.extend([auxv::PAGESZ, PAGE_SIZE]);
    words.extend([auxv::CLKTCK, CLOCK_TICKS_PER_SECOND]);
    if let Some(program_headers) = image.program_headers {
        words.extend([auxv::PHDR, program_headers]);
        words.extend([
            auxv::PHENT,
            core::mem::size_of::<elf::ProgramHeader64<LittleEndian>>() as u64,
        ]);
        words.extend([auxv::PHNUM, image.program_header_count]);
    }
    words.extend([auxv::BASE, image.interpreter_base]);
    words.extend([auxv::FLAGS, 0]);
    words.extend([auxv::ENTRY, image.program_entry]);
    words.extend([auxv::UID, 0, auxv::EUID, 0, auxv::GID, 0, auxv::EGID, 0]);
    words.extend([auxv::SECURE, 0]);
    words.extend([auxv::RANDOM, random]);
    words.extend([auxv::HWCAP2, 0]);
    words.extend([auxv::EXECFN, execfn]);
    words.extend([auxv::PLATFORM, platform]);
    words.extend([auxv::NULL, 0]);
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let rsp = cursor
        .checked_sub(bytes.len() as u64)
        .ok_or_else(|| not_executable("arguments too large"))?
        & !0xf;
    space.write(rsp, &bytes).map_err(mapping_error)?;
    Ok(rsp)
}
