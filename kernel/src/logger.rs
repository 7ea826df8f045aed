//! The `log` crate's sink: every record goes to the serial console, stamped
//! with the uptime, e.g. `[    0.412] INFO  sched: ...`.

use log::{LevelFilter, Log, Metadata, Record};

struct SerialLogger;

static LOGGER: SerialLogger = SerialLogger;

impl Log for SerialLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // Third-party drivers log their internals in Rust's debug notation
        // (`Features(MAC | STATUS)`): only their warnings and errors reach
        // the console; the kernel says what matters in its own words.
        metadata.level() <= log::Level::Warn || !metadata.target().starts_with("virtio_drivers")
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let uptime_us = hal::timer::uptime_ns() / 1000;
        hal::console::write_fmt(format_args!(
            "[{:5}.{:06}] {:5} {}: {}\n",
            uptime_us / 1_000_000,
            uptime_us % 1_000_000,
            record.level(),
            record.target(),
            record.args()
        ));
    }

    fn flush(&self) {}
}

/// Installs the serial logger at `level`.
pub fn init(level: LevelFilter) {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
