//! Random sequences of `mmap`, `munmap`, `mprotect`, `mremap`, `brk`,
//! `madvise(MADV_DONTNEED)`, `fork`, exits and user reads, writes and
//! instruction fetches, run on [`AddressMap`]s over [`FakeTables`] and on
//! a simple model of Linux's semantics: per process, a map from page to
//! its protection and contents (a word of its own, or a page of a shared
//! object). After every step each process must have the same pages with
//! the same protections, the same contents, and every operation the same
//! answer; and the page tables must be safe: no page writable while
//! another process can see its frame (copy-on-write isolation), no page
//! mapped outside a region or with more access than its region gives.
//!
//! One thing the model takes from the map under test: where a mapping
//! (one region) ends, for `mremap` of "one mapping". Which neighbouring
//! pages form one mapping is the implementation's choice (Linux joins
//! some neighbours, the model does not care); everything else is the
//! model's own.

use alloc::{collections::BTreeMap, vec::Vec};

use hal::paging::{UserProtection, PAGE_SIZE};
use proptest::prelude::*;

use super::{fake, fake::FakeTables, new_map, touch, Access, Segv};
/// The end of what mappings may cover (Linux's `TASK_SIZE`): the user
/// half less its last page.
const USER_END: u64 = hal::paging::USER_END - PAGE_SIZE;

use crate::{
    AddressMap, AnonymousMemory, Remap, SharedSource, VmError, MMAP_CEILING, MMAP_FLOOR,
    MMAP_MIN_ADDRESS,
};

/// Pages in the window the operations work in.
const WINDOW_PAGES: u64 = 40;
/// The window's first address: where mappings without a fixed address
/// go (just below the ceiling), with a few pages above the ceiling.
const WINDOW: u64 = MMAP_CEILING - (WINDOW_PAGES - 8) * PAGE_SIZE;
/// Where the break starts (not page aligned: it rounds up), inside the
/// window, so that the break meets mappings.
const BREAK_START: u64 = WINDOW + 3;
/// Most processes alive at once.
const MAX_PROCESSES: usize = 4;

/// The address of window page `page`.
fn window(page: u64) -> u64 {
    WINDOW + page * PAGE_SIZE
}

/// What a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contents {
    /// A word of the process's own.
    Private(u64),
    /// Page `page` of shared object `object`.
    Shared { object: usize, page: u64 },
}

/// A mapped page in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Page {
    protection: UserProtection,
    contents: Contents,
}

/// A process in the model.
#[derive(Clone, Debug)]
struct Process {
    /// Mapped pages by address.
    pages: BTreeMap<u64, Page>,
    /// Where the break starts (page aligned).
    break_start: u64,
    /// The break.
    break_end: u64,
}

/// The model: processes and the shared objects' pages.
#[derive(Debug)]
struct Model {
    processes: Vec<Process>,
    /// Each object's pages' words.
    objects: Vec<Vec<u64>>,
}

/// A length in bytes: `pages` pages, less a few bytes if `ragged` (a
/// length that is not a whole number of pages rounds up).
fn length(pages: u64, ragged: bool) -> u64 {
    if ragged && pages > 0 {
        pages * PAGE_SIZE - 100
    } else {
        pages * PAGE_SIZE
    }
}

/// `len` in whole pages' bytes, if it does not overflow.
fn page_up(len: u64) -> Option<u64> {
    len.checked_next_multiple_of(PAGE_SIZE)
}

impl Process {
    /// Whether no page of `[start, end)` is mapped.
    fn free(&self, start: u64, end: u64) -> bool {
        self.pages.range(start..end).next().is_none()
    }

    /// Unmaps `[start, end)`.
    fn remove(&mut self, start: u64, end: u64) {
        let inside: Vec<u64> = self
            .pages
            .range(start..end)
            .map(|(&page, _)| page)
            .collect();
        for page in inside {
            self.pages.remove(&page);
        }
    }

    /// The highest free range of `size` bytes between the floor and the
    /// ceiling (Linux's top-down placement, which vm follows).
    fn highest_gap(&self, size: u64) -> Option<u64> {
        let mut start = MMAP_CEILING.checked_sub(size)?;
        while start >= MMAP_FLOOR {
            match self.pages.range(start..start + size).next_back() {
                None => return Some(start),
                // Below the highest page in the way.
                Some((&page, _)) => start = page.checked_sub(size)?,
            }
        }
        None
    }
}

/// One step.
#[derive(Clone, Debug)]
enum Op {
    /// `mmap`, anonymous, private or shared; `hint` is used if `fixed`.
    Map {
        process: usize,
        hint: u64,
        pages: u64,
        ragged: bool,
        protection: UserProtection,
        fixed: bool,
        shared: bool,
    },
    /// `munmap`.
    Unmap {
        process: usize,
        start: u64,
        pages: u64,
        ragged: bool,
    },
    /// `mprotect`.
    Protect {
        process: usize,
        start: u64,
        pages: u64,
        ragged: bool,
        protection: UserProtection,
    },
    /// `mremap`.
    Remap {
        process: usize,
        start: u64,
        old_pages: u64,
        new_pages: u64,
        placement: Remap,
    },
    /// `brk`.
    Break { process: usize, address: u64 },
    /// `madvise(MADV_DONTNEED)`.
    Discard {
        process: usize,
        start: u64,
        pages: u64,
    },
    /// `fork`.
    Fork { process: usize },
    /// The process ends (unless it is the last).
    Exit { process: usize },
    /// User code touches a page.
    Touch {
        process: usize,
        address: u64,
        access: Access,
    },
}

/// An address in the window, now and then one `mmap` and friends refuse
/// (unaligned, below the lowest fixed address, near the top of the user
/// half).
fn address() -> impl Strategy<Value = u64> {
    prop_oneof![
        12 => (0..WINDOW_PAGES).prop_map(window),
        1 => (0..WINDOW_PAGES).prop_map(|page| window(page) + 8),
        1 => Just(MMAP_MIN_ADDRESS - PAGE_SIZE),
        1 => Just(USER_END - PAGE_SIZE),
    ]
}

fn protection() -> impl Strategy<Value = UserProtection> {
    prop_oneof![
        1 => Just(UserProtection::None),
        1 => Just(UserProtection::Read),
        3 => Just(UserProtection::ReadWrite),
        1 => Just(UserProtection::ReadExecute),
        1 => Just(UserProtection::ReadWriteExecute),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let process = 0..MAX_PROCESSES;
    prop_oneof![
        4 => (process.clone(), address(), 0..6u64, any::<bool>(), protection(), any::<bool>(), prop::bool::weighted(0.25))
            .prop_map(|(process, hint, pages, ragged, protection, fixed, shared)| Op::Map {
                process, hint, pages, ragged, protection, fixed, shared,
            }),
        2 => (process.clone(), address(), 0..6u64, any::<bool>())
            .prop_map(|(process, start, pages, ragged)| Op::Unmap { process, start, pages, ragged }),
        3 => (process.clone(), address(), 0..6u64, any::<bool>(), protection())
            .prop_map(|(process, start, pages, ragged, protection)| Op::Protect {
                process, start, pages, ragged, protection,
            }),
        2 => (
            process.clone(),
            address(),
            0..5u64,
            0..7u64,
            prop_oneof![
                Just(Remap::InPlace),
                Just(Remap::MayMove),
                address().prop_map(Remap::To),
            ],
        )
            .prop_map(|(process, start, old_pages, new_pages, placement)| Op::Remap {
                process, start, old_pages, new_pages, placement,
            }),
        2 => (process.clone(), prop_oneof![
                Just(0),
                (0..(16 * PAGE_SIZE)).prop_map(|offset| BREAK_START - PAGE_SIZE + offset),
            ])
            .prop_map(|(process, address)| Op::Break { process, address }),
        1 => (process.clone(), address(), 1..4u64)
            .prop_map(|(process, start, pages)| Op::Discard { process, start, pages }),
        1 => process.clone().prop_map(|process| Op::Fork { process }),
        1 => process.clone().prop_map(|process| Op::Exit { process }),
        10 => (
            process,
            (0..WINDOW_PAGES, 0..PAGE_SIZE / 8).prop_map(|(page, word)| window(page) + word * 8),
            prop_oneof![
                3 => Just(Access::Read),
                3 => (1..1000u64).prop_map(Access::Write),
                1 => Just(Access::Execute),
            ],
        )
            .prop_map(|(process, address, access)| Op::Touch { process, address, access }),
    ]
}

/// The answers of one step, to compare.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Mapped(Result<u64, VmError>),
    Done(Result<(), VmError>),
    Break(u64),
    Touched(Result<u64, Segv>),
    Nothing,
}

impl Model {
    fn new() -> Self {
        let break_start = page_up(BREAK_START).unwrap();
        Model {
            processes: alloc::vec![Process {
                pages: BTreeMap::new(),
                break_start,
                break_end: break_start,
            }],
            objects: Vec::new(),
        }
    }

    /// Pages `first..` of a new object, or of none (private, zero).
    fn new_pages(&mut self, count: u64, shared: bool) -> impl Iterator<Item = Contents> {
        let object = shared.then(|| {
            self.objects.push(alloc::vec![0; count as usize]);
            self.objects.len() - 1
        });
        (0..count).map(move |page| match object {
            Some(object) => Contents::Shared { object, page },
            None => Contents::Private(0),
        })
    }

    /// What `access` at `address` does in process `index`.
    fn touch(&mut self, index: usize, address: u64, access: Access) -> Result<u64, Segv> {
        let page = address & !(PAGE_SIZE - 1);
        let Some(&Page {
            protection,
            contents,
        }) = self.processes[index].pages.get(&page)
        else {
            return Err(Segv);
        };
        let allowed = match protection {
            UserProtection::None => false,
            UserProtection::Read => access == Access::Read,
            UserProtection::ReadWrite => access != Access::Execute,
            UserProtection::ReadExecute => !matches!(access, Access::Write(_)),
            UserProtection::ReadWriteExecute => true,
        };
        if !allowed {
            return Err(Segv);
        }
        let word = match contents {
            Contents::Private(word) => word,
            Contents::Shared { object, page } => {
                // Beyond the object's end: the program's fault.
                *self.objects[object].get(page as usize).ok_or(Segv)?
            }
        };
        let Access::Write(value) = access else {
            return Ok(word);
        };
        match contents {
            Contents::Private(_) => {
                self.processes[index].pages.get_mut(&page).unwrap().contents =
                    Contents::Private(value);
            }
            Contents::Shared { object, page } => self.objects[object][page as usize] = value,
        }
        Ok(value)
    }
}

/// Runs `op` on process `index` of the model; `real` is that process's
/// map before the step (for where a mapping ends, see the module's
/// comment).
fn model_step(model: &mut Model, index: usize, op: &Op, real: &AddressMap<FakeTables>) -> Answer {
    match *op {
        Op::Map {
            hint,
            pages,
            ragged,
            protection,
            fixed,
            shared,
            ..
        } => {
            let len = length(pages, ragged);
            let answer = (|| {
                if len == 0 {
                    return Err(VmError::BadRange);
                }
                let size = page_up(len).ok_or(VmError::NoMemory)?;
                let process = &model.processes[index];
                let start = if fixed {
                    hint.checked_add(size)
                        .filter(|&end| end <= USER_END)
                        .ok_or(VmError::NoMemory)?;
                    if !hint.is_multiple_of(PAGE_SIZE) {
                        return Err(VmError::BadRange);
                    }
                    if hint < MMAP_MIN_ADDRESS {
                        return Err(VmError::BelowMinimum);
                    }
                    hint
                } else {
                    process.highest_gap(size).ok_or(VmError::NoMemory)?
                };
                let contents: Vec<Contents> = model.new_pages(size / PAGE_SIZE, shared).collect();
                let process = &mut model.processes[index];
                process.remove(start, start + size);
                for (page, contents) in contents.into_iter().enumerate() {
                    process.pages.insert(
                        start + page as u64 * PAGE_SIZE,
                        Page {
                            protection,
                            contents,
                        },
                    );
                }
                Ok(start)
            })();
            Answer::Mapped(answer)
        }
        Op::Unmap {
            start,
            pages,
            ragged,
            ..
        } => {
            let len = length(pages, ragged);
            let end = page_up(len).and_then(|size| start.checked_add(size));
            Answer::Done(match end {
                Some(end) if len > 0 && start.is_multiple_of(PAGE_SIZE) && end <= USER_END => {
                    model.processes[index].remove(start, end);
                    Ok(())
                }
                _ => Err(VmError::BadRange),
            })
        }
        Op::Protect {
            start,
            pages,
            ragged,
            protection,
            ..
        } => {
            let len = length(pages, ragged);
            let process = &mut model.processes[index];
            Answer::Done((|| {
                if !start.is_multiple_of(PAGE_SIZE) {
                    return Err(VmError::BadRange);
                }
                if len == 0 {
                    return Ok(());
                }
                let end = page_up(len)
                    .and_then(|size| start.checked_add(size))
                    .filter(|&end| end <= USER_END)
                    .ok_or(VmError::NoMemory)?;
                if (start..end)
                    .step_by(PAGE_SIZE as usize)
                    .any(|page| !process.pages.contains_key(&page))
                {
                    return Err(VmError::NoMemory);
                }
                for (_, page) in process.pages.range_mut(start..end) {
                    page.protection = protection;
                }
                Ok(())
            })())
        }
        Op::Remap {
            start,
            old_pages,
            new_pages,
            placement,
            ..
        } => {
            let old_len = old_pages * PAGE_SIZE;
            let new_size = new_pages * PAGE_SIZE;
            Answer::Mapped((|| {
                let old_end = start.checked_add(old_len).filter(|&end| end <= USER_END);
                let Some(old_end) =
                    old_end.filter(|_| start.is_multiple_of(PAGE_SIZE) && old_len > 0)
                else {
                    return Err(VmError::BadRange);
                };
                if new_size == 0 {
                    return Err(VmError::BadRange);
                }
                // The old range must lie in one mapping.
                let Some(mapping) = real.region_at(start) else {
                    return Err(VmError::NotOneMapping);
                };
                let mapping_end = mapping.end;
                if old_end > mapping_end {
                    return Err(VmError::NotOneMapping);
                }
                let process = &mut model.processes[index];
                let first = process.pages[&start];
                let destination = match placement {
                    Remap::To(destination) => {
                        if destination < MMAP_MIN_ADDRESS {
                            return Err(VmError::BelowMinimum);
                        }
                        let end = destination
                            .checked_add(new_size)
                            .filter(|&end| end <= USER_END);
                        let Some(end) = end.filter(|_| destination.is_multiple_of(PAGE_SIZE))
                        else {
                            return Err(VmError::BadRange);
                        };
                        if destination < old_end && start < end {
                            return Err(VmError::BadRange);
                        }
                        process.remove(destination, end);
                        destination
                    }
                    Remap::InPlace | Remap::MayMove => {
                        let new_end = start + new_size;
                        if new_end <= old_end {
                            process.remove(new_end, old_end);
                            return Ok(start);
                        }
                        if old_end == mapping_end
                            && new_end <= USER_END
                            && process.free(old_end, new_end)
                        {
                            let last = process.pages[&(old_end - PAGE_SIZE)];
                            for page in (old_end..new_end).step_by(PAGE_SIZE as usize) {
                                process
                                    .pages
                                    .insert(page, grown(last, old_end - PAGE_SIZE, page));
                            }
                            return Ok(start);
                        }
                        if placement == Remap::InPlace {
                            return Err(VmError::NoMemory);
                        }
                        process.highest_gap(new_size).ok_or(VmError::NoMemory)?
                    }
                };
                // Moving: the pages go with their contents; a larger
                // mapping continues the old one's memory.
                let moved: Vec<(u64, Page)> = process
                    .pages
                    .range(start..old_end)
                    .map(|(&page, &p)| (page, p))
                    .collect();
                process.remove(start, old_end);
                for offset in (0..new_size).step_by(PAGE_SIZE as usize) {
                    let page = match moved.iter().find(|&&(page, _)| page == start + offset) {
                        Some(&(_, page)) if offset < old_len => page,
                        _ => grown(first, start, start + offset),
                    };
                    process.pages.insert(destination + offset, page);
                }
                Ok(destination)
            })())
        }
        Op::Break { address, .. } => {
            let process = &mut model.processes[index];
            if address < process.break_start || address - process.break_start > 1 << 30 {
                return Answer::Break(process.break_end);
            }
            let old_top = page_up(process.break_end).unwrap();
            let new_top = page_up(address).unwrap();
            if new_top > old_top {
                if !process.free(old_top, new_top) {
                    return Answer::Break(process.break_end);
                }
                for page in (old_top..new_top).step_by(PAGE_SIZE as usize) {
                    process.pages.insert(
                        page,
                        Page {
                            protection: UserProtection::ReadWrite,
                            contents: Contents::Private(0),
                        },
                    );
                }
            } else {
                process.remove(new_top, old_top);
            }
            process.break_end = address;
            Answer::Break(address)
        }
        Op::Discard { start, pages, .. } => {
            let process = &mut model.processes[index];
            let end = start + pages * PAGE_SIZE;
            Answer::Done(if !start.is_multiple_of(PAGE_SIZE) || end > USER_END {
                Err(VmError::BadRange)
            } else if (start..end)
                .step_by(PAGE_SIZE as usize)
                .any(|page| !process.pages.contains_key(&page))
            {
                Err(VmError::NoMemory)
            } else {
                // Private pages read as zeros again; shared ones are the
                // object's still.
                for (_, page) in process.pages.range_mut(start..end) {
                    if let Contents::Private(_) = page.contents {
                        page.contents = Contents::Private(0);
                    }
                }
                Ok(())
            })
        }
        Op::Fork { .. } => {
            let child = model.processes[index].clone();
            model.processes.push(child);
            Answer::Nothing
        }
        Op::Exit { .. } => {
            model.processes.remove(index);
            Answer::Nothing
        }
        Op::Touch {
            address, access, ..
        } => Answer::Touched(model.touch(index, address, access)),
    }
}

/// The page at `page` of a mapping grown or moved beyond its old end:
/// the mapping's protection, and for shared memory the object's page
/// that follows (`from` is a page of the old mapping, `sample` there).
fn grown(sample: Page, from: u64, page: u64) -> Page {
    let contents = match sample.contents {
        Contents::Private(_) => Contents::Private(0),
        Contents::Shared {
            object,
            page: first,
        } => Contents::Shared {
            object,
            page: first + (page - from) / PAGE_SIZE,
        },
    };
    Page {
        protection: sample.protection,
        contents,
    }
}

/// Runs `op` on the map under test.
fn real_step(maps: &mut Vec<AddressMap<FakeTables>>, index: usize, op: &Op) -> Answer {
    let map = &mut maps[index];
    match *op {
        Op::Map {
            hint,
            pages,
            ragged,
            protection,
            fixed,
            shared,
            ..
        } => {
            let len = length(pages, ragged);
            Answer::Mapped(if shared {
                // The kernel's MAP_SHARED | MAP_ANONYMOUS: an object the
                // mapping's size.
                match AnonymousMemory::<FakeTables>::new(len.div_ceil(PAGE_SIZE)) {
                    Some(object) => map.map_shared(
                        hint,
                        len,
                        protection,
                        fixed,
                        SharedSource {
                            object: alloc::sync::Arc::new(object),
                            first_page: 0,
                            may_write: true,
                        },
                    ),
                    None => Err(VmError::NoMemory),
                }
            } else {
                map.map_anonymous(hint, len, protection, fixed)
            })
        }
        Op::Unmap {
            start,
            pages,
            ragged,
            ..
        } => Answer::Done(map.unmap(start, length(pages, ragged))),
        Op::Protect {
            start,
            pages,
            ragged,
            protection,
            ..
        } => Answer::Done(map.protect(start, length(pages, ragged), protection)),
        Op::Remap {
            start,
            old_pages,
            new_pages,
            placement,
            ..
        } => Answer::Mapped(map.remap(
            start,
            old_pages * PAGE_SIZE,
            new_pages * PAGE_SIZE,
            placement,
        )),
        Op::Break { address, .. } => Answer::Break(map.set_break(address)),
        Op::Discard { start, pages, .. } => Answer::Done(map.discard(start, pages * PAGE_SIZE)),
        Op::Fork { .. } => {
            let child = map.fork().expect("fork with memory to spare");
            maps.push(child);
            Answer::Nothing
        }
        Op::Exit { .. } => {
            maps.remove(index);
            Answer::Nothing
        }
        Op::Touch {
            address, access, ..
        } => Answer::Touched(touch(map, address, access)),
    }
}

/// The process an operation names, among those alive, or `None` if the
/// operation cannot run (a fork beyond the most processes, the last
/// process's exit).
fn process_of(op: &Op, alive: usize) -> Option<usize> {
    let (Op::Map { process, .. }
    | Op::Unmap { process, .. }
    | Op::Protect { process, .. }
    | Op::Remap { process, .. }
    | Op::Break { process, .. }
    | Op::Discard { process, .. }
    | Op::Fork { process }
    | Op::Exit { process }
    | Op::Touch { process, .. }) = *op;
    match op {
        Op::Fork { .. } if alive == MAX_PROCESSES => None,
        Op::Exit { .. } if alive == 1 => None,
        _ => Some(process % alive),
    }
}

/// Checks process `index` of the map under test against the model.
fn check(
    model: &Model,
    maps: &[AddressMap<FakeTables>],
    index: usize,
) -> Result<(), TestCaseError> {
    let map = &maps[index];
    let process = &model.processes[index];
    // Regions: sorted, apart, page aligned, not empty; and the same pages
    // with the same protections as the model's.
    let mut pages = BTreeMap::new();
    let mut previous_end = 0;
    for region in map.regions() {
        prop_assert!(
            region.start >= previous_end && region.start < region.end,
            "{region:?}"
        );
        prop_assert!(
            region.start.is_multiple_of(PAGE_SIZE) && region.end.is_multiple_of(PAGE_SIZE)
        );
        prop_assert!(
            region.end - region.start <= 1024 * PAGE_SIZE,
            "a huge region {region:?}"
        );
        previous_end = region.end;
        for page in (region.start..region.end).step_by(PAGE_SIZE as usize) {
            pages.insert(page, region.protection);
        }
    }
    let expected: BTreeMap<u64, UserProtection> = process
        .pages
        .iter()
        .map(|(&page, p)| (page, p.protection))
        .collect();
    prop_assert_eq!(&pages, &expected, "process {}: regions", index);
    // The page tables: only pages of regions, with no more access than
    // the region gives, writable only where no other owner sees the
    // frame, holding what the model says.
    let entries = map.space().entries();
    for (&page, entry) in &entries {
        let Some(model_page) = process.pages.get(&page) else {
            return Err(TestCaseError::fail(format!(
                "{page:#x} is mapped outside every region"
            )));
        };
        let copy_on_write_pending = model_page.protection.is_writable()
            && entry.protection == model_page.protection.without_write();
        prop_assert!(
            entry.protection == model_page.protection || copy_on_write_pending,
            "{:#x}: entry {:?}, region {:?}",
            page,
            entry.protection,
            model_page.protection
        );
        let frame = fake::frame(entry.frame);
        prop_assert!(frame.owners > 0, "{:#x} maps a freed frame", page);
        if entry.protection.is_writable() {
            prop_assert!(
                frame.owners == 1 || frame.shared_memory,
                "{:#x} is writable with its frame shared ({} owners)",
                page,
                frame.owners
            );
        }
        let expected = match model_page.contents {
            Contents::Private(word) => word,
            Contents::Shared { object, page } => model.objects[object][page as usize],
        };
        prop_assert_eq!(
            frame.contents,
            expected,
            "process {}: contents of {:#x}",
            index,
            page
        );
    }
    // A private page not mapped yet must read as zeros when it is.
    for (&page, model_page) in &process.pages {
        if !entries.contains_key(&page) {
            if let Contents::Private(word) = model_page.contents {
                prop_assert_eq!(word, 0, "process {}: {:#x} lost its contents", index, page);
            }
        }
    }
    Ok(())
}

/// Runs `ops` on both and checks every process after every step.
fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut maps = alloc::vec![new_map(BREAK_START)];
    let mut model = Model::new();
    for (step, op) in ops.iter().enumerate() {
        let Some(index) = process_of(op, maps.len()) else {
            continue;
        };
        let expected = model_step(&mut model, index, op, &maps[index]);
        let answer = real_step(&mut maps, index, op);
        prop_assert_eq!(
            &answer,
            &expected,
            "step {}: {:?} on process {}",
            step,
            op,
            index
        );
        for index in 0..maps.len() {
            check(&model, &maps, index).map_err(|error| {
                TestCaseError::fail(format!("after step {step} ({op:?}): {error}"))
            })?;
        }
    }
    drop(maps);
    prop_assert_eq!(fake::live_frames(), 0, "frames leaked");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    })]

    /// Random sequences of operations agree with the model at every step.
    #[test]
    fn the_address_map_agrees_with_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(&ops)?;
    }
}
