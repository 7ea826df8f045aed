//! `info`.
