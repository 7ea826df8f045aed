//! Host tests of domains, the nameserver and capability tables (000 §3.1).

use std::sync::Arc;

use dispatch::{Denied, Principal, Signature, ValueType};
use domain::*;

fn write_type() -> SymbolType {
    SymbolType::Procedure(Signature::new(&[ValueType::U64], None))
}

fn open_type() -> SymbolType {
    SymbolType::Procedure(Signature::new(&[], Some(ValueType::U64)))
}

fn console() -> Domain {
    Domain::create(
        "Console",
        SymbolTable::new()
            .export(Export::new(
                "Console.Open",
                open_type(),
                (|| 7u64) as fn() -> u64,
            ))
            .export(Export::new(
                "Console.Write",
                write_type(),
                (|x| x * 2) as fn(u64) -> u64,
            )),
    )
    .unwrap()
}

fn gatekeeper() -> Domain {
    Domain::create(
        "Gatekeeper",
        SymbolTable::new()
            .export(Export::new(
                "Gatekeeper.IntruderAlert",
                SymbolType::Procedure(Signature::new(&[], None)),
                (),
            ))
            .import(Import::new("Console.Open", open_type()))
            .import(Import::new("Console.Write", write_type()))
            .import(Import::new("Disk.Read", write_type())),
    )
    .unwrap()
}

#[test]
fn create_exports_and_leaves_imports_unresolved() {
    let g = gatekeeper();
    assert_eq!(
        g.unresolved(),
        vec!["Console.Open", "Console.Write", "Disk.Read"]
    );
    assert_eq!(g.exports().len(), 1);
    assert_eq!(
        g.imported::<fn() -> u64>("Console.Open").err(),
        Some(LinkError::Unresolved("Console.Open".into()))
    );
    let duplicate = SymbolTable::new()
        .export(Export::new("X", open_type(), 1u64))
        .export(Export::new("X", open_type(), 2u64));
    assert_eq!(
        Domain::create("D", duplicate).err(),
        Some(LinkError::DuplicateExport("X".into()))
    );
}

#[test]
fn resolve_fills_only_the_targets_unresolved_symbols() {
    let (c, g) = (console(), gatekeeper());
    let r = Domain::resolve(&c, &g).unwrap();
    assert_eq!(r.resolved, vec!["Console.Open", "Console.Write"]);
    assert_eq!(r.unresolved, vec!["Disk.Read"]);
    assert_eq!(g.unresolved(), vec!["Disk.Read"]);
    let write = g.imported::<fn(u64) -> u64>("Console.Write").unwrap();
    assert_eq!(write(21), 42);
    assert_eq!(
        g.imported::<u32>("Console.Write").err(),
        Some(LinkError::WrongValueType("Console.Write".into()))
    );
    // Resolve adds no exports to the target, and leaves the source alone.
    assert_eq!(g.exports().len(), 1);
    assert!(g.export("Console.Write").is_none());
    assert!(c.unresolved().is_empty());
    // Resolving again changes nothing already resolved.
    let again = Domain::resolve(&c, &g).unwrap();
    assert!(again.resolved.is_empty());
}

#[test]
fn resolve_is_type_checked_and_all_or_nothing() {
    let g = gatekeeper();
    let wrong = Domain::create(
        "FakeConsole",
        SymbolTable::new()
            .export(Export::new(
                "Console.Open",
                open_type(),
                (|| 1u64) as fn() -> u64,
            ))
            .export(Export::new(
                "Console.Write",
                SymbolType::Data(ValueType::U64),
                5u64,
            )),
    )
    .unwrap();
    match Domain::resolve(&wrong, &g) {
        Err(LinkError::TypeMismatch { name, .. }) => assert_eq!(name, "Console.Write"),
        other => panic!("expected a type mismatch, got {other:?}"),
    }
    assert_eq!(g.unresolved().len(), 3, "nothing was resolved");
}

#[test]
fn cross_linking_is_two_resolves() {
    let a = Domain::create(
        "A",
        SymbolTable::new()
            .export(Export::new("A.f", open_type(), 1u64))
            .import(Import::new("B.g", open_type())),
    )
    .unwrap();
    let b = Domain::create(
        "B",
        SymbolTable::new()
            .export(Export::new("B.g", open_type(), 2u64))
            .import(Import::new("A.f", open_type())),
    )
    .unwrap();
    Domain::resolve(&a, &b).unwrap();
    Domain::resolve(&b, &a).unwrap();
    assert_eq!(*a.imported::<u64>("B.g").unwrap(), 2);
    assert_eq!(*b.imported::<u64>("A.f").unwrap(), 1);
}

#[test]
fn combine_exports_both_and_resolves_into_parts() {
    let disk = Domain::create(
        "Disk",
        SymbolTable::new().export(Export::new("Disk.Read", write_type(), 3u64)),
    )
    .unwrap();
    let public = Domain::combine(&console(), &disk).unwrap();
    let names: Vec<String> = public.exports().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, vec!["Console.Open", "Console.Write", "Disk.Read"]);
    let g = gatekeeper();
    let r = Domain::resolve(&public, &g).unwrap();
    assert!(r.unresolved.is_empty());
    // An aggregate target: its parts' imports get resolved.
    let (g2, c) = (gatekeeper(), console());
    let both = Domain::combine(&g2, &c).unwrap();
    assert_eq!(
        both.unresolved(),
        vec!["Console.Open", "Console.Write", "Disk.Read"]
    );
    Domain::resolve(&disk, &both).unwrap();
    assert_eq!(g2.unresolved(), vec!["Console.Open", "Console.Write"]);
    // Clashing exports cannot be combined.
    assert_eq!(
        Domain::combine(&console(), &console()).err(),
        Some(LinkError::DuplicateExport("Console.Open".into()))
    );
}

struct Clock;

impl Module for Clock {
    fn name(&self) -> &str {
        "Clock"
    }
    fn exports(&self) -> Vec<Export> {
        vec![Export::new(
            "Clock.Now",
            open_type(),
            (|| 123u64) as fn() -> u64,
        )]
    }
}

#[test]
fn create_from_module_exports_its_own_interface() {
    let d = Domain::create_from_module(&Clock).unwrap();
    assert_eq!(d.name(), "Clock");
    assert_eq!((d.exported::<fn() -> u64>("Clock.Now").unwrap())(), 123);
}

#[test]
fn nameserver_versions_and_import_authorization() {
    let ns = NameServer::new();
    let exporter = Principal(1);
    let allowed = Principal(2);
    let denied = Principal(3);
    let authorizer: Arc<dyn ImportAuthorizer> =
        Arc::new(move |importer: Principal, _: &str, _: Version| {
            if importer == allowed {
                Ok(())
            } else {
                Err(Denied::new("not a console user"))
            }
        });
    ns.export(
        "ConsoleService",
        Version::new(1, 2),
        console(),
        exporter,
        Some(authorizer.clone()),
    )
    .unwrap();
    assert_eq!(
        ns.export(
            "ConsoleService",
            Version::new(1, 2),
            console(),
            exporter,
            None
        ),
        Err(NameError::AlreadyExported {
            name: "ConsoleService".into(),
            version: Version::new(1, 2)
        })
    );
    let d = ns
        .import("ConsoleService", Version::new(1, 0), allowed)
        .unwrap();
    assert!(d.export("Console.Write").is_some());
    assert_eq!(
        ns.import("ConsoleService", Version::new(1, 0), denied)
            .err(),
        Some(NameError::Denied {
            name: "ConsoleService".into(),
            denied: Denied::new("not a console user")
        })
    );
    assert_eq!(
        ns.import("ConsoleService", Version::new(2, 0), allowed)
            .err(),
        Some(NameError::NoCompatibleVersion {
            name: "ConsoleService".into(),
            wanted: Version::new(2, 0)
        })
    );
    assert!(
        ns.import("ConsoleService", Version::new(1, 3), allowed)
            .is_err(),
        "1.2 does not satisfy 1.3"
    );
    assert_eq!(
        ns.import("Nothing", Version::new(1, 0), allowed).err(),
        Some(NameError::NotFound("Nothing".into()))
    );
    // Newest compatible version wins.
    let newer = console();
    ns.export(
        "ConsoleService",
        Version::new(1, 5),
        newer.clone(),
        exporter,
        None,
    )
    .unwrap();
    assert!(ns
        .import("ConsoleService", Version::new(1, 0), denied)
        .unwrap()
        .same(&newer));
    assert_eq!(ns.list().len(), 2);
    assert_eq!(
        ns.withdraw("ConsoleService", Version::new(1, 5), allowed),
        Err(NameError::NotExporter)
    );
    ns.withdraw("ConsoleService", Version::new(1, 5), exporter)
        .unwrap();
    assert!(ns
        .import("ConsoleService", Version::new(1, 0), denied)
        .is_err());
}

struct Page(u64);
struct Port(u16);

#[test]
fn handle_tables_type_check_and_never_name_another_object() {
    let extension = HandleTable::new(Principal(7));
    let page = extension
        .insert(Arc::new(Page(0x1000)), Rights::ALL)
        .unwrap();
    let port = extension.insert(Arc::new(Port(53)), Rights::NONE).unwrap();
    assert_eq!(extension.lookup::<Page>(page).unwrap().0, 0x1000);
    assert_eq!(extension.lookup::<Port>(port).unwrap().0, 53);
    assert!(matches!(
        extension.lookup::<Port>(page),
        Err(HandleError::WrongType { .. })
    ));
    // Never given.
    assert_eq!(
        extension.lookup::<Page>(Handle::from_u64(99)).err(),
        Some(HandleError::Invalid)
    );
    // The same slot at a generation it has not reached (handles are
    // `generation << 16 | index`).
    assert_eq!(
        extension
            .lookup::<Page>(Handle::from_u64(page.as_u64() + (1 << 16)))
            .err(),
        Some(HandleError::Invalid)
    );
    // Closed, then the slot reused: the old handle does not reach the new object.
    extension.close(port).unwrap();
    assert_eq!(
        extension.lookup::<Port>(port).err(),
        Some(HandleError::Invalid)
    );
    let other = extension.insert(Arc::new(Port(80)), Rights::NONE).unwrap();
    assert_ne!(other, port);
    assert_eq!(
        extension.lookup::<Port>(port).err(),
        Some(HandleError::Invalid)
    );
    assert_eq!(extension.lookup::<Port>(other).unwrap().0, 80);
    assert_eq!(extension.close(port), Err(HandleError::Invalid));
}

#[test]
fn duplicate_transfer_revoke_follow_rights() {
    let kernel = HandleTable::new(Principal::KERNEL);
    let process = HandleTable::new(Principal(100));
    let page = kernel.insert(Arc::new(Page(1)), Rights::ALL).unwrap();
    let copy = kernel
        .duplicate_into(page, &process, Rights::TRANSFER)
        .unwrap();
    assert_eq!(process.rights(copy), Ok(Rights::TRANSFER));
    // No DUPLICATE right on the copy.
    assert_eq!(
        process.duplicate(copy, Rights::NONE),
        Err(HandleError::PermissionDenied)
    );
    // Cannot widen rights.
    let narrow = kernel.insert(Arc::new(Page(2)), Rights::DUPLICATE).unwrap();
    assert_eq!(
        kernel.duplicate(narrow, Rights::ALL),
        Err(HandleError::PermissionDenied)
    );
    // Transfer moves it.
    let other = HandleTable::new(Principal(101));
    let moved = process.transfer(copy, &other).unwrap();
    assert_eq!(
        process.lookup::<Page>(copy).err(),
        Some(HandleError::Invalid)
    );
    assert_eq!(other.lookup::<Page>(moved).unwrap().0, 1);
    assert_eq!(
        kernel.transfer(narrow, &other),
        Err(HandleError::PermissionDenied)
    );
    // Revoking the original revokes every duplicate, wherever it went.
    kernel.revoke(page).unwrap();
    assert_eq!(
        kernel.lookup::<Page>(page).err(),
        Some(HandleError::Invalid)
    );
    assert_eq!(
        other.lookup::<Page>(moved).err(),
        Some(HandleError::Revoked)
    );
    assert_eq!(
        other.duplicate(moved, Rights::NONE),
        Err(HandleError::Revoked)
    );
    other.clear();
    assert!(other.is_empty());
}

/// The slot index and generation of a handle, as `Handle` documents them.
fn index_and_generation(handle: Handle) -> (i32, i32) {
    let raw = handle.as_i32();
    (raw & 0xffff, raw >> 16)
}

#[test]
fn handles_are_non_negative_i32s_checked_by_generation() {
    let table = HandleTable::new(Principal(7));
    let mut handles: Vec<Handle> = (0..1000)
        .map(|n| table.insert(Arc::new(Page(n)), Rights::NONE).unwrap())
        .collect();
    for (n, handle) in handles.iter().enumerate() {
        assert!(handle.as_i32() >= 0);
        assert_eq!(handle.as_u64(), handle.as_i32() as u64);
        assert_eq!(Handle::from_i32(handle.as_i32()), *handle);
        assert_eq!(table.lookup::<Page>(*handle).unwrap().0, n as u64);
    }
    // Churn one slot: each reuse has the same index and a new generation,
    // and no earlier handle reaches the new object.
    let first = handles[0];
    for round in 1..100 {
        let previous = *handles.last().unwrap();
        table.close(previous).unwrap();
        let next = table.insert(Arc::new(Port(round)), Rights::NONE).unwrap();
        let (index, generation) = index_and_generation(next);
        assert_eq!(index, index_and_generation(previous).0);
        assert_eq!(generation, index_and_generation(previous).1 + 1);
        assert!(next.as_i32() >= 0);
        assert_eq!(
            table.lookup::<Port>(previous).err(),
            Some(HandleError::Invalid)
        );
        handles.push(next);
    }
    assert_eq!(table.lookup::<Page>(first).unwrap().0, 0);
    // Negative values and values above `i32::MAX` are never valid.
    for raw in [-1, i32::MIN, -(first.as_i32() + 1)] {
        let forged = Handle::from_i32(raw);
        assert_eq!(forged.as_i32(), -1);
        assert_eq!(
            table.lookup::<Page>(forged).err(),
            Some(HandleError::Invalid)
        );
        assert_eq!(table.close(forged), Err(HandleError::Invalid));
    }
    let above = Handle::from_u64(first.as_u64() | 1 << 31);
    assert_eq!(above.as_i32(), -1);
    assert_eq!(
        table.lookup::<Page>(above).err(),
        Some(HandleError::Invalid)
    );
    assert_eq!(table.len(), 1000);
}

#[test]
fn a_slot_whose_generation_would_wrap_is_retired() {
    let table = HandleTable::new(Principal(7));
    let mut handle = table.insert(Arc::new(Page(0)), Rights::NONE).unwrap();
    let first = handle;
    // Generations 0 to 32,767 fit the handle's 15 bits.
    for generation in 1..(1 << 15) {
        table.close(handle).unwrap();
        handle = table
            .insert(Arc::new(Page(generation)), Rights::NONE)
            .unwrap();
        assert_eq!(index_and_generation(handle), (0, generation as i32));
    }
    assert_eq!(handle.as_i32(), i32::MAX & !0xffff);
    // Closing the last generation retires slot 0 instead of wrapping it
    // back to generation 0, where `first` would name the next occupant.
    table.close(handle).unwrap();
    let next = table.insert(Arc::new(Page(1)), Rights::NONE).unwrap();
    assert_eq!(index_and_generation(next), (1, 0));
    assert_eq!(
        table.lookup::<Page>(first).err(),
        Some(HandleError::Invalid)
    );
    assert_eq!(
        table.lookup::<Page>(handle).err(),
        Some(HandleError::Invalid)
    );
    // Clearing does not bring it back either.
    table.clear();
    let after_clear = table.insert(Arc::new(Page(2)), Rights::NONE).unwrap();
    assert_eq!(index_and_generation(after_clear), (1, 1));
    // With slot 0 retired, the other 65,535 slots are all that is left:
    // the table runs out of numbers before it reaches its limit.
    for n in 1..(MAX_HANDLES as u64 - 1) {
        table.insert(Arc::new(Page(n)), Rights::NONE).unwrap();
    }
    assert_eq!(table.len(), MAX_HANDLES - 1);
    assert_eq!(
        table.insert(Arc::new(Page(0)), Rights::NONE),
        Err(HandleError::Exhausted)
    );
}

#[test]
fn a_limited_table_refuses_inserts_beyond_its_limit() {
    let kernel = HandleTable::new(Principal::KERNEL);
    let small = HandleTable::with_limit(Principal(9), 2);
    assert_eq!(small.limit(), 2);
    let a = small.insert(Arc::new(Page(1)), Rights::NONE).unwrap();
    small
        .insert_named("port", Arc::new(Port(2)), Rights::NONE)
        .unwrap();
    assert_eq!(
        small.insert(Arc::new(Page(3)), Rights::NONE),
        Err(HandleError::Full { limit: 2 })
    );
    // Grants and transfers into a full table are refused too, and a refused
    // transfer leaves the capability where it was.
    let granted = kernel.insert(Arc::new(Page(4)), Rights::ALL).unwrap();
    assert_eq!(
        kernel.duplicate_into(granted, &small, Rights::NONE),
        Err(HandleError::Full { limit: 2 })
    );
    assert_eq!(
        kernel.transfer(granted, &small),
        Err(HandleError::Full { limit: 2 })
    );
    assert_eq!(kernel.lookup::<Page>(granted).unwrap().0, 4);
    // Closing one makes room.
    small.close(a).unwrap();
    let moved = kernel.transfer(granted, &small).unwrap();
    assert_eq!(small.lookup::<Page>(moved).unwrap().0, 4);
    assert_eq!(small.len(), 2);
    assert!(kernel.is_empty());
    // No limit above what handles can number.
    assert_eq!(
        HandleTable::with_limit(Principal(9), usize::MAX).limit(),
        MAX_HANDLES
    );
    assert_eq!(HandleTable::new(Principal(9)).limit(), MAX_HANDLES);
}

#[test]
fn named_handles_are_found_while_live() {
    let table = HandleTable::new(Principal(7));
    assert_eq!(table.find_named("Timer.Tick"), None);
    let unnamed = table.insert(Arc::new(Page(0)), Rights::NONE).unwrap();
    let tick = table
        .insert_named("Timer.Tick", Arc::new(Port(1)), Rights::DUPLICATE)
        .unwrap();
    let again = table
        .insert_named(String::from("Timer.Tick"), Arc::new(Port(2)), Rights::NONE)
        .unwrap();
    assert_ne!(tick, unnamed);
    // The lowest-numbered of two with the same name.
    assert_eq!(table.find_named("Timer.Tick"), Some(tick));
    assert_eq!(table.find_named("Timer"), None);
    // A duplicate keeps the name, in whichever table it goes to.
    let other = HandleTable::new(Principal(8));
    let copy = table.duplicate_into(tick, &other, Rights::NONE).unwrap();
    assert_eq!(other.find_named("Timer.Tick"), Some(copy));
    // Closed or revoked, it is no longer found.
    table.close(tick).unwrap();
    assert_eq!(table.find_named("Timer.Tick"), Some(again));
    assert_eq!(other.find_named("Timer.Tick"), Some(copy));
    table.close(again).unwrap();
    assert_eq!(table.find_named("Timer.Tick"), None);
    let revocable = table
        .insert_named("Net.Packet", Arc::new(Port(3)), Rights::DUPLICATE)
        .unwrap();
    let lent = table
        .duplicate_into(revocable, &other, Rights::NONE)
        .unwrap();
    assert_eq!(other.find_named("Net.Packet"), Some(lent));
    table.revoke(revocable).unwrap();
    assert_eq!(other.find_named("Net.Packet"), None);
    assert_eq!(other.lookup::<Port>(lent).err(), Some(HandleError::Revoked));
}
