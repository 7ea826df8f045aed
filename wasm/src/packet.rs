//! Packets as extensions see them: a capability lent for one invocation.
//!
//! The types are `extension_interface`'s (a leaf crate, so the network
//! services implement them without this runtime), re-exported here. A
//! network event's first parameter is a [`PacketRef`]. When the dispatcher
//! calls a Wasm handler of such an event, the runtime puts the packet into
//! the extension's handle table as a
//! [`Capability::Packet`](crate::Capability::Packet), passes the handle as
//! an `i32`, and revokes it when the invocation returns: an extension reads
//! (and answers) a packet through its handle table and never holds a
//! pointer into kernel memory, nor the packet beyond the handler.

pub use extension_interface::packet::*;

/// Whether a parameter of type `ty` is a packet (lowered to a handle).
pub(crate) fn is_packet(ty: dispatch::ValueType) -> bool {
    matches!(ty, dispatch::ValueType::Opaque { id, .. } if id == core::any::TypeId::of::<PacketRef>())
}
