//! `signal_frame`.
