//! `resource`.
