//! The wall clock: the date and time of the PC's CMOS real-time clock,
//! read once at boot, carried forward by the uptime clock, and set by
//! whoever may set the time (`clock_settime`, `settimeofday`).
//!
//! The CMOS clock counts seconds only, and reading it means waiting for
//! its update cycle; the uptime clock (the TSC) is precise and cheap.
//! So the wall clock is the uptime plus an offset: the RTC's time at
//! boot less the uptime then. The date arithmetic is plain code, tested
//! on the host.

use core::sync::atomic::{AtomicU64, Ordering};

/// Nanoseconds between the Unix epoch and uptime 0: the wall clock is
/// the uptime plus this. 0 (the wall clock starts at the epoch) until
/// [`init`] reads the RTC.
static EPOCH_OFFSET_NS: AtomicU64 = AtomicU64::new(0);

/// The wall-clock time: nanoseconds since the Unix epoch (UTC).
#[cfg(target_os = "none")]
pub fn realtime_ns() -> u64 {
    EPOCH_OFFSET_NS
        .load(Ordering::Relaxed)
        .wrapping_add(crate::timer::uptime_ns())
}

/// Nanoseconds to add to an uptime to get the wall-clock time (what
/// absolute real-time deadlines are converted by).
pub fn epoch_offset_ns() -> u64 {
    EPOCH_OFFSET_NS.load(Ordering::Relaxed)
}

/// Sets the wall clock to `now` nanoseconds since the epoch (the caller
/// checked the right to).
#[cfg(target_os = "none")]
pub fn set_realtime_ns(now: u64) {
    let uptime = crate::timer::uptime_ns();
    EPOCH_OFFSET_NS.store(now.wrapping_sub(uptime), Ordering::Relaxed);
}

/// Reads the CMOS clock and starts the wall clock from it; the time it
/// read, in seconds since the epoch, or `None` (the wall clock stays at
/// the epoch) if the clock reads as no valid date.
#[cfg(target_os = "none")]
pub fn init() -> Option<u64> {
    let seconds = cmos::read_seconds_since_epoch()?;
    set_realtime_ns(seconds.saturating_mul(1_000_000_000));
    Some(seconds)
}

/// A date and time as the RTC gives it, already in binary, 24-hour form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CalendarTime {
    /// The full year (2026).
    pub year: u32,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
    /// 0 to 59 (60 in a leap second is taken as 59).
    pub second: u32,
}

impl CalendarTime {
    /// Seconds since 1970-01-01 00:00:00 UTC, or `None` for a date
    /// before 1970 or fields out of range.
    pub fn seconds_since_epoch(&self) -> Option<u64> {
        let CalendarTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
        } = *self;
        if year < 1970
            || !(1..=12).contains(&month)
            || day == 0
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(
            days * 86_400
                + u64::from(hour) * 3_600
                + u64::from(minute) * 60
                + u64::from(second.min(59)),
        )
    }
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the date (year 1970 or later): whole years,
/// then whole months of the year, then days.
fn days_from_civil(year: u32, month: u32, day: u32) -> u64 {
    let years: u64 = (1970..year)
        .map(|year| if is_leap(year) { 366 } else { 365 })
        .sum();
    let months: u64 = (1..month)
        .map(|month| u64::from(days_in_month(year, month)))
        .sum();
    years + months + u64::from(day - 1)
}

/// Decodes one RTC field: binary as it is, or two BCD digits.
pub fn decode_field(raw: u8, binary: bool) -> u32 {
    if binary {
        u32::from(raw)
    } else {
        u32::from(raw >> 4) * 10 + u32::from(raw & 0x0f)
    }
}

/// Decodes the hour: in 12-hour mode bit 7 means p.m. and 12 is
/// midnight or noon.
pub fn decode_hour(raw: u8, binary: bool, twenty_four_hour: bool) -> u32 {
    if twenty_four_hour {
        return decode_field(raw, binary);
    }
    let afternoon = raw & 0x80 != 0;
    let hour = decode_field(raw & 0x7f, binary) % 12;
    if afternoon {
        hour + 12
    } else {
        hour
    }
}

#[cfg(target_os = "none")]
mod cmos {
    use x86_64::instructions::port::Port;

    use super::{decode_field, decode_hour, CalendarTime};

    /// The CMOS index port (bit 7 set keeps NMIs off while selecting).
    const INDEX_PORT: u16 = 0x70;
    /// The CMOS data port.
    const DATA_PORT: u16 = 0x71;
    /// Status register A: bit 7 is set while the clock updates.
    const STATUS_A: u8 = 0x0a;
    /// Status register B: bit 2 binary (else BCD), bit 1 24-hour.
    const STATUS_B: u8 = 0x0b;
    /// The century register QEMU and most firmware keep (ACPI FADT's
    /// default).
    const CENTURY: u8 = 0x32;

    fn read_register(register: u8) -> u8 {
        let mut index = Port::<u8>::new(INDEX_PORT);
        let mut data = Port::<u8>::new(DATA_PORT);
        // SAFETY: ports 0x70 and 0x71 are the CMOS's index and data
        // registers; selecting a register with NMIs masked and reading
        // it changes nothing but which register is selected, and only
        // this function (run at boot, before other CPUs or interrupt
        // handlers use the CMOS) selects one.
        unsafe {
            index.write(0x80 | register);
            data.read()
        }
    }

    fn updating() -> bool {
        read_register(STATUS_A) & 0x80 != 0
    }

    /// The registers' raw values: seconds, minutes, hours, day, month,
    /// year, century.
    fn raw() -> [u8; 7] {
        [0x00, 0x02, 0x04, 0x07, 0x08, 0x09, CENTURY].map(read_register)
    }

    /// The clock's time: read outside an update cycle, twice until two
    /// reads agree (an update between them would tear the date).
    pub(super) fn read_seconds_since_epoch() -> Option<u64> {
        let mut previous = None;
        for _ in 0..16 {
            let mut spins = 0u32;
            while updating() && spins < 1_000_000 {
                spins += 1;
                core::hint::spin_loop();
            }
            let now = raw();
            if previous == Some(now) {
                break;
            }
            previous = Some(now);
        }
        let [second, minute, hour, day, month, year, century] = previous?;
        let status = read_register(STATUS_B);
        let binary = status & 0x04 != 0;
        let twenty_four_hour = status & 0x02 != 0;
        let century = match decode_field(century, binary) {
            19..=30 => decode_field(century, binary),
            // No century register: this is the 21st.
            _ => 20,
        };
        CalendarTime {
            year: century * 100 + decode_field(year, binary),
            month: decode_field(month, binary),
            day: decode_field(day, binary),
            hour: decode_hour(hour, binary, twenty_four_hour),
            minute: decode_field(minute, binary),
            second: decode_field(second, binary),
        }
        .seconds_since_epoch()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(year: u32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Option<u64> {
        CalendarTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
        }
        .seconds_since_epoch()
    }

    #[test]
    fn dates_convert_to_unix_time() {
        assert_eq!(at(1970, 1, 1, 0, 0, 0), Some(0));
        assert_eq!(at(2000, 3, 1, 0, 0, 0), Some(951_868_800));
        assert_eq!(at(2026, 11, 27, 23, 57, 58), Some(1_795_823_878));
        assert_eq!(at(2024, 2, 29, 12, 0, 0), Some(1_709_208_000));
        assert_eq!(at(2038, 1, 19, 3, 14, 8), Some(1 << 31));
    }

    #[test]
    fn impossible_dates_are_none() {
        assert_eq!(at(1969, 12, 31, 23, 59, 59), None);
        assert_eq!(at(2023, 2, 29, 0, 0, 0), None);
        assert_eq!(at(2100, 2, 29, 0, 0, 0), None, "not a leap year");
        assert_eq!(at(2026, 13, 1, 0, 0, 0), None);
        assert_eq!(at(2026, 4, 31, 0, 0, 0), None);
        assert_eq!(at(2026, 1, 1, 24, 0, 0), None);
    }

    #[test]
    fn rtc_fields_decode_from_bcd_and_twelve_hour_form() {
        assert_eq!(decode_field(0x59, false), 59);
        assert_eq!(decode_field(59, true), 59);
        assert_eq!(decode_hour(0x12, false, false), 0, "12 a.m. is midnight");
        assert_eq!(decode_hour(0x92, false, false), 12, "12 p.m. is noon");
        assert_eq!(decode_hour(0x81, false, false), 13);
        assert_eq!(decode_hour(0x23, false, true), 23);
        assert_eq!(decode_hour(0x80 | 11, true, false), 23);
    }
}
