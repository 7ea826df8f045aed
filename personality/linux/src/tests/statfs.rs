//! `statfs`.
