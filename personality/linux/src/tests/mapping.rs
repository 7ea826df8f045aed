//! `mapping`.
