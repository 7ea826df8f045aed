//! `signal`.
