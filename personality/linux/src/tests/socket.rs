//! `socket`.
