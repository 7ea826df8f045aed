//! `xattr`.
