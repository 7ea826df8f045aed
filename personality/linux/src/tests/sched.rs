//! `sched`.
