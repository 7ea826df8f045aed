//! `poll`.
