//! `user`.
