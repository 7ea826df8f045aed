//! Debian's busybox applets (the issue's list) on the Linux personality,
//! each doing real work, in one script whose output is compared byte for
//! byte with what the same busybox prints on Linux.

use super::{ensure, user::run_and_capture, KernelTest, TestResult};
use linux_process::threads::UserExit;

pub const TESTS: &[KernelTest] = &[KernelTest {
    name: "busybox_applets_do_their_work",
    run: applets,
}];

/// `ls`, `cat`, `cp`, `mv`, `rm`, `mkdir`, `grep`, `sed`, `awk`, `sort`,
/// `uniq`, `head`, `tail`, `wc`, `find`, `xargs`, `touch`, `dd`, `tar`,
/// `gzip`, `date`, `sleep`, `kill`, `ps` and `vi` (started on a script
/// of commands and quit). Run in a directory of its own under `/tmp`,
/// removed at the end.
const SCRIPT: &str = r#"cd /tmp && rm -rf at && mkdir at && cd at
printf 'banana\napple\ncherry\napple\n' > fruit.txt
cp fruit.txt copy.txt && mv copy.txt moved.txt && ls -1
cat moved.txt | sort | uniq -c | sort -rn | head -1
grep -c apple fruit.txt
sed -n 's/an/AN/gp' fruit.txt
awk '{ n += length($0) } END { print "chars", n }' fruit.txt
tail -2 fruit.txt | wc -l
mkdir -p d/e && touch d/e/f d/g
find d -type f | sort
find d -name 'f' | xargs echo found
dd if=/dev/zero of=zero.bin bs=512 count=4 2>/dev/null && wc -c < zero.bin
tar -cf d.tar d && rm -r d && tar -xf d.tar && ls d/e
gzip -k fruit.txt && ls fruit.txt.gz && gzip -dc fruit.txt.gz | head -1
date -d @0 -u +%Y-%m-%d
sleep 0.1 && echo slept
sleep 5 & pid=$!; kill $pid; wait $pid; echo "killed $?"
sleep 3 & sleep 0.2; ps -o pid,comm | grep -c sleep; kill %1
ls -l moved.txt | awk '{ print $1, $5, $NF }'
echo ':q!' | vi -c ':q!' fruit.txt >/dev/null 2>&1; echo "vi $?"
cd / && rm -r /tmp/at && echo done
"#;

/// What Debian's busybox 1.35 prints for [`SCRIPT`] on Linux (its
/// "Terminated" report of the job `kill` ended included).
const EXPECTED: &str = "fruit.txt\nmoved.txt\n      2 apple\n2\nbANANa\nchars 22\n2\nd/e/f\nd/g\nfound d/e/f\n2048\nf\nfruit.txt.gz\nbanana\n1970-01-01\nslept\nTerminated\nkilled 143\n1\n-rw-r--r-- 26 moved.txt\nvi 0\ndone\n";

fn applets() -> TestResult {
    let (end, output) = run_and_capture("busybox", &["sh", "-c", SCRIPT])?;
    ensure!(
        end == UserExit::Exited(0) && output == EXPECTED,
        "sh {end}; it printed:\n{output}\ninstead of:\n{EXPECTED}"
    );
    Ok(())
}
