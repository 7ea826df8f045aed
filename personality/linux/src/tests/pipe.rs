//! `pipe`.
