//! Pure parsers for what the guest prints and how QEMU exits.
//!
//! Everything the harness concludes from a boot goes through this module, so
//! the rules are unit-tested on the host without QEMU: the in-kernel test
//! summary line, QEMU's exit status under `isa-debug-exit`, the `bench` line
//! format, and the number of milliseconds in an `uptime` reply.

use std::fmt;

/// Value the kernel writes to the `isa-debug-exit` port on a clean halt or
/// when every in-kernel test passed. QEMU then exits with `(value << 1) | 1`.
pub const GUEST_EXIT_SUCCESS_VALUE: i32 = 0x10;
/// Value the kernel writes to the `isa-debug-exit` port on a panic, an
/// unexpected fault or a failed in-kernel test.
pub const GUEST_EXIT_FAILURE_VALUE: i32 = 0x11;
/// QEMU's exit status after the guest wrote [`GUEST_EXIT_SUCCESS_VALUE`]: 33.
pub const QEMU_EXIT_SUCCESS: i32 = (GUEST_EXIT_SUCCESS_VALUE << 1) | 1;
/// QEMU's exit status after the guest wrote [`GUEST_EXIT_FAILURE_VALUE`]: 35.
pub const QEMU_EXIT_FAILURE: i32 = (GUEST_EXIT_FAILURE_VALUE << 1) | 1;

/// Units a `bench` line may report a figure in.
pub const BENCH_UNITS: &[&str] = &["ns", "cycles", "ops/s", "MB/s", "x"];

/// How a QEMU run ended, decoded from its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestExit {
    /// Exit status 33: the kernel halted cleanly or its tests passed.
    Success,
    /// Exit status 35: the kernel reported a failure (panic, fault, test).
    Failure,
    /// Any other exit status. 0 usually means the guest reset or shut down
    /// without using `isa-debug-exit` (with `-no-reboot`, a triple fault ends
    /// QEMU with 0); 1 usually means QEMU itself refused to start.
    Unexpected(i32),
    /// QEMU was ended by a signal (the number, when known).
    Signalled(Option<i32>),
    /// The harness killed QEMU because its wall-clock deadline passed.
    TimedOut,
}

/// The guest's value for a program's exit status 0 (`hal::qemu::STATUS_BASE`).
const GUEST_STATUS_BASE: i32 = 0x40;

impl GuestExit {
    /// The exit status of the program `spindle.mode=exec` ran, if QEMU's
    /// status carries one (the kernel writes `0x40 + status`).
    pub fn program_status(&self) -> Option<u8> {
        match self {
            Self::Unexpected(code) if *code & 1 == 1 => {
                let value = code >> 1;
                (GUEST_STATUS_BASE..GUEST_STATUS_BASE + 64)
                    .contains(&value)
                    .then(|| (value - GUEST_STATUS_BASE) as u8)
            }
            _ => None,
        }
    }

    /// Decodes QEMU's exit status: `code` is `None` when a signal ended it.
    pub fn from_status(code: Option<i32>, signal: Option<i32>) -> Self {
        match code {
            Some(QEMU_EXIT_SUCCESS) => Self::Success,
            Some(QEMU_EXIT_FAILURE) => Self::Failure,
            Some(other) => Self::Unexpected(other),
            None => Self::Signalled(signal),
        }
    }
}

impl fmt::Display for GuestExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success => write!(f, "exit status {QEMU_EXIT_SUCCESS} (kernel success)"),
            Self::Failure => write!(f, "exit status {QEMU_EXIT_FAILURE} (kernel failure)"),
            Self::Unexpected(0) => write!(
                f,
                "unexpected QEMU exit status 0 (guest reset or shut down without \
                 isa-debug-exit: a triple fault?)"
            ),
            Self::Unexpected(code) => write!(f, "unexpected QEMU exit status {code}"),
            Self::Signalled(Some(signal)) => write!(f, "QEMU killed by signal {signal}"),
            Self::Signalled(None) => write!(f, "QEMU killed by a signal"),
            Self::TimedOut => write!(
                f,
                "run deadline passed, QEMU killed (see SPINDLE_QEMU_TIMEOUT)"
            ),
        }
    }
}

/// The closing line of the in-kernel tests: `N passed, N failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestSummary {
    /// Number of in-kernel tests that passed.
    pub passed: u64,
    /// Number of in-kernel tests that failed.
    pub failed: u64,
}

/// Parses one line of the form `N passed, N failed` (a trailing
/// `, N skipped` or `\r` is tolerated). Anything else gives `None`.
pub fn parse_test_summary(line: &str) -> Option<TestSummary> {
    let line = line.trim_end_matches(['\r', '\n']).trim_end();
    let (passed, rest) = line.split_once(" passed, ")?;
    let (failed, rest) = rest.split_once(" failed").unwrap_or((rest, ""));
    if !(rest.is_empty() || rest.starts_with(", ")) {
        return None;
    }
    Some(TestSummary {
        passed: parse_decimal(passed)?,
        failed: parse_decimal(failed)?,
    })
}

/// Finds the last `N passed, N failed` line in a serial log.
pub fn find_test_summary(log: &str) -> Option<TestSummary> {
    log.lines().rev().find_map(parse_test_summary)
}

/// The number of tests the kernel announced with `running N tests`.
pub fn find_planned_tests(log: &str) -> Option<usize> {
    log.lines().find_map(|line| {
        line.trim_end()
            .strip_prefix("running ")?
            .strip_suffix(" tests")?
            .parse()
            .ok()
    })
}

/// The number of the last `fuzz case <N>` line of a kernel fuzz run: the
/// case that was running when the kernel stopped, if it stopped early.
pub fn last_fuzz_case(log: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|line| line.trim_end().strip_prefix("fuzz case ")?.parse().ok())
}

/// Outcome of one in-kernel test, from a `test <name> ... ok|FAILED` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResultLine {
    /// The test's name.
    pub name: String,
    /// Whether the kernel reported it `ok`.
    pub is_ok: bool,
    /// What follows the verdict, e.g. the reason in `FAILED: <why>`.
    pub detail: String,
}

/// Collects every in-kernel test result from a serial log.
///
/// A test that prints while it runs splits its line, as cargo's runner does:
/// `test <name> ... ` ends one line, the test's own output follows, and the
/// verdict (`ok`, `FAILED: ...`) stands at the start of a later line. A test
/// that started but never got a verdict (the kernel died in it) is reported
/// as failed with detail `did not finish`.
pub fn parse_test_results(log: &str) -> Vec<TestResultLine> {
    let mut results = Vec::new();
    let mut running: Option<&str> = None;
    for line in log.lines() {
        if let Some((name, verdict)) = split_test_line(line) {
            if let Some(unfinished) = running.take() {
                results.push(unfinished_test(unfinished));
            }
            match parse_verdict(verdict) {
                Some((is_ok, detail)) => results.push(TestResultLine {
                    name: name.to_string(),
                    is_ok,
                    detail,
                }),
                // The test printed before its verdict (on this line or
                // the next ones): the verdict starts a later line.
                None => running = Some(name),
            }
        } else if let Some(name) = running {
            if let Some((is_ok, detail)) = parse_verdict(line.trim()) {
                results.push(TestResultLine {
                    name: name.to_string(),
                    is_ok,
                    detail,
                });
                running = None;
            }
        }
    }
    if let Some(unfinished) = running {
        results.push(unfinished_test(unfinished));
    }
    results
}

fn unfinished_test(name: &str) -> TestResultLine {
    TestResultLine {
        name: name.to_string(),
        is_ok: false,
        detail: "did not finish".to_string(),
    }
}

/// Splits `test <name> ... <verdict>` (the verdict may be empty).
fn split_test_line(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_end_matches(['\r', '\n']);
    let rest = line.strip_prefix("test ")?;
    match rest.split_once(" ... ") {
        Some((name, verdict)) => Some((name, verdict.trim_end())),
        None => rest.trim_end().strip_suffix(" ...").map(|name| (name, "")),
    }
}

/// Parses `ok` or `FAILED`, optionally followed by `:` or a space and more.
fn parse_verdict(verdict: &str) -> Option<(bool, String)> {
    let verdict = verdict.trim_end();
    let (is_ok, detail) = if let Some(detail) = verdict.strip_prefix("ok") {
        (true, detail)
    } else if let Some(detail) = verdict.strip_prefix("FAILED") {
        (false, detail)
    } else {
        return None;
    };
    if !(detail.is_empty() || detail.starts_with([':', ' '])) {
        return None;
    }
    Some((is_ok, detail.trim_start_matches(':').trim().to_string()))
}

/// One figure: `bench <suite>.<name> <median> <unit> [key=value ...]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchLine {
    /// Suite name, before the first dot (`boot`).
    pub suite: String,
    /// Figure name within the suite (`direct_call`).
    pub name: String,
    /// The median.
    pub value: f64,
    /// One of [`BENCH_UNITS`].
    pub unit: String,
    /// Optional `key=value` pairs, in order.
    pub pairs: Vec<(String, String)>,
}

/// Parses a `bench` line; the error says what is wrong with it.
pub fn parse_bench_line(line: &str) -> Result<BenchLine, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut words = line.split_whitespace();
    if words.next() != Some("bench") {
        return Err("does not start with `bench `".into());
    }
    let figure = words.next().ok_or("no figure name")?;
    let (suite, name) = figure
        .split_once('.')
        .filter(|(suite, name)| !suite.is_empty() && !name.is_empty())
        .ok_or("figure name is not `<suite>.<name>`")?;
    let value_text = words.next().ok_or("no value")?;
    let value: f64 = value_text
        .parse()
        .ok()
        .filter(|value: &f64| value.is_finite())
        .ok_or_else(|| format!("value `{value_text}` is not a number"))?;
    let unit = words.next().ok_or("no unit")?;
    if !BENCH_UNITS.contains(&unit) {
        return Err(format!("unit `{unit}` is not one of {BENCH_UNITS:?}"));
    }
    let pairs = words
        .map(|word| {
            word.split_once('=')
                .filter(|(key, _)| !key.is_empty())
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .ok_or_else(|| format!("`{word}` is not key=value"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(BenchLine {
        suite: suite.to_string(),
        name: name.to_string(),
        value,
        unit: unit.to_string(),
        pairs,
    })
}

/// Formats a figure in the `bench` line format.
pub fn format_bench_line(
    figure: &str,
    value: u128,
    unit: &str,
    pairs: &[(&str, String)],
) -> String {
    let mut line = format!("bench {figure} {value} {unit}");
    for (key, value) in pairs {
        line.push_str(&format!(" {key}={value}"));
    }
    line
}

/// Combines one figure measured by several processes into one line: the
/// median of the values and of every numeric pair (a ratio's `x` suffix
/// kept), except `min` (the smallest), `max` (the largest) and `runs` (the
/// total); `processes=<n>` is appended. Every process runs the same binary
/// with its own stack and heap addresses, which move some figures by 10%
/// or more: the median over processes is what a reader reproduces.
/// `lines` must be non-empty and all of one figure.
pub fn combine_bench_lines(lines: &[BenchLine]) -> String {
    let first = &lines[0];
    let mut text = format!(
        "bench {}.{} {:.2} {}",
        first.suite,
        first.name,
        median(lines.iter().map(|l| l.value).collect()),
        first.unit
    );
    for (key, value) in &first.pairs {
        let suffix = if value.ends_with('x') { "x" } else { "" };
        let numbers: Option<Vec<f64>> = lines
            .iter()
            .map(|l| {
                l.pairs
                    .iter()
                    .find(|(k, _)| k == key)
                    .and_then(|(_, v)| v.trim_end_matches('x').parse::<f64>().ok())
            })
            .collect();
        let combined = match (key.as_str(), numbers) {
            (_, None) => value.clone(),
            ("min", Some(n)) => format!("{:.2}", n.iter().copied().fold(f64::INFINITY, f64::min)),
            ("max", Some(n)) => {
                format!("{:.2}", n.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            }
            ("runs", Some(n)) => format!("{}", n.iter().sum::<f64>()),
            (_, Some(n)) => format!("{:.2}{suffix}", median(n)),
        };
        text.push_str(&format!(" {key}={combined}"));
    }
    text.push_str(&format!(" processes={}", lines.len()));
    text
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// Finds the first decimal number directly followed by `ms` (spaces allowed
/// between), e.g. `uptime: 1234 ms` gives 1234.0 and `up 12.5ms` gives 12.5.
pub fn parse_milliseconds(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        if !bytes[index].is_ascii_digit() || (index > 0 && is_number_byte(bytes[index - 1])) {
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        if index + 1 < bytes.len() && bytes[index] == b'.' && bytes[index + 1].is_ascii_digit() {
            index += 1;
            while index < bytes.len() && bytes[index].is_ascii_digit() {
                index += 1;
            }
        }
        let number = &text[start..index];
        let after = text[index..].trim_start_matches(' ');
        let is_ms =
            after.starts_with("ms") && !after[2..].starts_with(|c: char| c.is_ascii_alphanumeric());
        if is_ms {
            return number.parse().ok();
        }
    }
    None
}

/// Whether `text` contains a decimal number.
pub fn contains_number(text: &str) -> bool {
    text.bytes().any(|byte| byte.is_ascii_digit())
}

fn is_number_byte(byte: u8) -> bool {
    byte.is_ascii_digit() || byte == b'.'
}

fn parse_decimal(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_isa_debug_exit() {
        assert_eq!(QEMU_EXIT_SUCCESS, 33);
        assert_eq!(QEMU_EXIT_FAILURE, 35);
        assert_eq!(GuestExit::from_status(Some(33), None), GuestExit::Success);
        assert_eq!(GuestExit::from_status(Some(35), None), GuestExit::Failure);
        assert_eq!(
            GuestExit::from_status(Some(0), None),
            GuestExit::Unexpected(0)
        );
        assert_eq!(
            GuestExit::from_status(Some(1), None),
            GuestExit::Unexpected(1)
        );
        assert_eq!(
            GuestExit::from_status(None, Some(9)),
            GuestExit::Signalled(Some(9))
        );
        assert!(GuestExit::Unexpected(0)
            .to_string()
            .contains("triple fault"));
    }

    #[test]
    fn summary_line_is_recognised() {
        assert_eq!(
            parse_test_summary("12 passed, 0 failed"),
            Some(TestSummary {
                passed: 12,
                failed: 0
            })
        );
        assert_eq!(
            parse_test_summary("3 passed, 2 failed\r"),
            Some(TestSummary {
                passed: 3,
                failed: 2
            })
        );
        assert_eq!(
            parse_test_summary("3 passed, 0 failed, 1 skipped"),
            Some(TestSummary {
                passed: 3,
                failed: 0
            })
        );
        assert_eq!(parse_test_summary("test foo ... ok"), None);
        assert_eq!(parse_test_summary("x passed, 0 failed"), None);
        assert_eq!(parse_test_summary("1 passed, 0 failedness"), None);
        assert_eq!(parse_test_summary("kernel: 1 passed, 0 failed"), None);
    }

    #[test]
    fn last_summary_wins() {
        let log = "boot\n1 passed, 1 failed\ntest a ... ok\n2 passed, 0 failed\r\nbye\n";
        assert_eq!(
            find_test_summary(log),
            Some(TestSummary {
                passed: 2,
                failed: 0
            })
        );
        assert_eq!(find_test_summary("no summary here\n"), None);
    }

    /// The result on one complete line, if any.
    fn parse_test_result(line: &str) -> Option<TestResultLine> {
        let mut results = parse_test_results(line);
        match (results.pop(), results.is_empty()) {
            (Some(result), true) if result.detail != "did not finish" => Some(result),
            _ => None,
        }
    }

    #[test]
    fn test_result_lines() {
        let ok = parse_test_result("test frames::alloc_free ... ok\r").unwrap();
        assert_eq!(
            (ok.name.as_str(), ok.is_ok, ok.detail.as_str()),
            ("frames::alloc_free", true, "")
        );
        let failed = parse_test_result("test heap grows ... FAILED").unwrap();
        assert_eq!((failed.name.as_str(), failed.is_ok), ("heap grows", false));
        let failed =
            parse_test_result("test traps::page_fault ... FAILED: CR2 0x0, expected 0x10").unwrap();
        assert!(!failed.is_ok);
        assert_eq!(failed.detail, "CR2 0x0, expected 0x10");
        assert_eq!(
            parse_test_result("test x ... ok (3 ms)").map(|line| line.is_ok),
            Some(true)
        );
        assert_eq!(parse_test_result("test x ... maybe"), None);
        assert_eq!(parse_test_result("test x ... okay"), None);
        assert_eq!(parse_test_result("testing ... ok"), None);
    }

    #[test]
    fn split_test_lines_are_joined() {
        let log = "boot\n\
            test a ... ok\n\
            test b ... \n\
            EXCEPTION: breakpoint\n\
            \x20 RAX=0x0\n\
            ok\n\
            test c ...\n\
            noise\n\
            FAILED: wrong CR2\n\
            test d ... FAILED\n\
            test e ... \n\
            KERNEL PANIC\n";
        let results: Vec<(String, bool, String)> = parse_test_results(log)
            .into_iter()
            .map(|result| (result.name, result.is_ok, result.detail))
            .collect();
        assert_eq!(
            results,
            vec![
                ("a".into(), true, "".into()),
                ("b".into(), true, "".into()),
                ("c".into(), false, "wrong CR2".into()),
                ("d".into(), false, "".into()),
                ("e".into(), false, "did not finish".into()),
            ]
        );
    }

    #[test]
    fn bench_lines_are_validated() {
        let line = parse_bench_line("bench boot.direct_call 3 ns iters=1000 reps=9").unwrap();
        assert_eq!(line.suite, "boot");
        assert_eq!(line.name, "direct_call");
        assert_eq!(line.value, 3.0);
        assert_eq!(line.unit, "ns");
        assert_eq!(
            line.pairs,
            vec![("iters".into(), "1000".into()), ("reps".into(), "9".into())]
        );
        assert_eq!(
            parse_bench_line("bench dispatch.raise 1.5 x")
                .unwrap()
                .value,
            1.5
        );
        assert_eq!(
            parse_bench_line("bench net.rx 12 MB/s\r").unwrap().unit,
            "MB/s"
        );
        assert!(parse_bench_line("bench boot 3 ns").is_err());
        assert!(parse_bench_line("bench boot.x fast ns").is_err());
        assert!(parse_bench_line("bench boot.x 3 seconds").is_err());
        assert!(parse_bench_line("bench boot.x 3 ns junk").is_err());
        assert!(parse_bench_line("bench boot.x 3").is_err());
        assert!(parse_bench_line("benchmark boot.x 3 ns").is_err());
    }

    #[test]
    fn figures_of_several_processes_combine_into_medians() {
        let lines: Vec<BenchLine> = [
            "bench dispatch.h 3.0 ns runs=11 min=2.9 max=3.1 ratio=6.00x",
            "bench dispatch.h 1.0 ns runs=11 min=0.8 max=1.2 ratio=2.00x",
            "bench dispatch.h 2.0 ns runs=11 min=1.9 max=4.0 ratio=4.00x",
        ]
        .iter()
        .map(|l| parse_bench_line(l).unwrap())
        .collect();
        let combined = combine_bench_lines(&lines);
        assert_eq!(
            combined,
            "bench dispatch.h 2.00 ns runs=33 min=0.80 max=4.00 ratio=4.00x processes=3"
        );
        assert!(parse_bench_line(&combined).is_ok());
        let even = combine_bench_lines(&lines[..2]);
        assert!(even.starts_with("bench dispatch.h 2.00 ns"), "{even}");
    }

    #[test]
    fn formatted_bench_lines_parse_back() {
        let line = format_bench_line(
            "boot.to_shell",
            812_000_000,
            "ns",
            &[("runs", "5".into()), ("min", "1".into())],
        );
        assert_eq!(line, "bench boot.to_shell 812000000 ns runs=5 min=1");
        assert!(parse_bench_line(&line).is_ok());
    }

    #[test]
    fn milliseconds_are_found() {
        assert_eq!(parse_milliseconds("uptime: 1234 ms"), Some(1234.0));
        assert_eq!(parse_milliseconds("up 12.5ms since boot"), Some(12.5));
        assert_eq!(parse_milliseconds("3 threads, 77 ms"), Some(77.0));
        assert_eq!(parse_milliseconds("tick 5 msec 9 ms"), Some(9.0));
        assert_eq!(parse_milliseconds("v1.2 up 40 ms"), Some(40.0));
        assert_eq!(parse_milliseconds("no number"), None);
        assert_eq!(parse_milliseconds("ms 12"), None);
    }

    #[test]
    fn last_fuzz_case_is_the_one_running() {
        let log = "fuzz case 4\nfuzz case 17\r\nEXCEPTION: page fault\nKERNEL PANIC\n";
        assert_eq!(last_fuzz_case(log), Some(17));
        assert_eq!(last_fuzz_case("fuzz kernel: 3 cases\n"), None);
    }

    #[test]
    fn planned_tests_are_read_from_the_running_line() {
        assert_eq!(
            find_planned_tests("boot\nrunning 24 tests\r\ntest a ... ok\n"),
            Some(24)
        );
        assert_eq!(find_planned_tests("running tests\n"), None);
    }

    #[test]
    fn output_after_the_test_name_still_gets_its_verdict() {
        let log = "test a ... [ext hello] hi\nok\ntest b ... \n  detail\n  ok\ntest c ... ok\n";
        let results = parse_test_results(log);
        let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(results.iter().all(|r| r.is_ok));
    }
}
