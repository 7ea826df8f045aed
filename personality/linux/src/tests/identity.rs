//! `identity`.
