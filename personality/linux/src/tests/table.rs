//! `table`.
