//! `fdtable`.
