//! Real Debian programs, tried as a new user would: `sqlite3` (a database
//! file, a transaction, an index, WAL mode), GNU `make` with parallel
//! jobs, GNU `tar` with gzip and xz keeping modes and times, `python3`
//! (subprocess, threads, json), `perl`, and `tcc` compiling a C program
//! that then runs (and `tcc -run`). Each is fetched with `apt-get
//! download` like the image's other Debian programs, with the shared
//! libraries it loads, at their Debian paths; the scenario
//! `debian_programs_do_real_work` runs [`guest_script`] and compares
//! what it prints with [`EXPECTED`].

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

use crate::{debian, Result};

/// The Debian packages the programs and their libraries come from.
const PACKAGES: &[&str] = &[
    "sqlite3",
    "libsqlite3-0",
    "libreadline8",
    "libtinfo6",
    "zlib1g",
    "make",
    "tar",
    "libacl1",
    "xz-utils",
    "liblzma5",
    "perl-base",
    "libcrypt1",
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libexpat1",
    "tcc",
    "libc6",
    "libc6-dev",
];

/// The programs: (package, path in it, path in the guest). They go under
/// `/opt/debian/bin`, clear of busybox's applet links (`/bin/tar`).
const PROGRAMS: &[(&str, &str, &str)] = &[
    ("sqlite3", "usr/bin/sqlite3", "opt/debian/bin/sqlite3"),
    ("make", "usr/bin/make", "opt/debian/bin/make"),
    ("tar", "bin/tar", "opt/debian/bin/tar"),
    ("xz-utils", "usr/bin/xz", "opt/debian/bin/xz"),
    ("perl-base", "usr/bin/perl", "opt/debian/bin/perl"),
    (
        "python3.11-minimal",
        "usr/bin/python3.11",
        "opt/debian/bin/python3",
    ),
    ("tcc", "usr/bin/tcc", "opt/debian/bin/tcc"),
];

/// Whole folders the programs read at run time, at their Debian paths:
/// Python's and Perl's libraries, tcc's own headers and runtime, and the
/// C library's headers, start files and link script for what tcc links.
const TREES: &[(&str, &str)] = &[
    ("libpython3.11-minimal", "usr/lib/python3.11"),
    ("libpython3.11-stdlib", "usr/lib/python3.11"),
    ("perl-base", "usr/lib/x86_64-linux-gnu/perl-base"),
    ("tcc", "usr/lib/x86_64-linux-gnu/tcc"),
    ("libc6-dev", "usr/include"),
    ("libc6-dev", "usr/lib/x86_64-linux-gnu/crt1.o"),
    ("libc6-dev", "usr/lib/x86_64-linux-gnu/crti.o"),
    ("libc6-dev", "usr/lib/x86_64-linux-gnu/crtn.o"),
    ("libc6-dev", "usr/lib/x86_64-linux-gnu/libc.so"),
    ("libc6-dev", "usr/lib/x86_64-linux-gnu/libc_nonshared.a"),
];

/// Parts of Python's library no check uses (tests, GUIs, installers):
/// left out to keep the archive small.
const PYTHON_LEFT_OUT: &[&str] = &[
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "pydoc_data",
    "config-3.11-x86_64-linux-gnu",
];

/// The folders that hold shared libraries in a package.
const LIBRARY_DIRECTORIES: &[&str] = &["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64"];

/// The files of the programs, their libraries and trees, as boot-archive
/// files, leaving out what the image has already (the C library, the
/// loader). A library that none of the packages holds is an error naming
/// it.
pub fn program_files() -> Result<Vec<(String, Vec<u8>)>> {
    let present: BTreeSet<String> = debian::image_files()?
        .into_iter()
        .map(|file| match file {
            debian::ImageFile::Regular(path, _) | debian::ImageFile::Link(path, _) => path,
        })
        .collect();
    let mut roots = BTreeMap::new();
    for package in PACKAGES {
        roots.insert(*package, debian::package(package)?);
    }
    // Every shared library of the packages, by file name: where it is in
    // its package (the same path as in the guest).
    let mut libraries: BTreeMap<String, (PathBuf, String)> = BTreeMap::new();
    for root in roots.values() {
        for directory in LIBRARY_DIRECTORIES {
            let Ok(entries) = fs::read_dir(root.join(directory)) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.contains(".so") {
                    libraries
                        .entry(name.clone())
                        .or_insert((entry.path(), format!("{directory}/{name}")));
                }
            }
        }
    }
    let mut files = Vec::new();
    let mut placed = present;
    let mut wanted = Vec::new();
    for &(package, inside, guest) in PROGRAMS {
        let path = roots[package].join(inside);
        wanted.extend(crate::stress::needed(&path)?);
        placed.insert(guest.to_string());
        files.push((guest.to_string(), fs::read(&path)?));
    }
    // Libraries the image has already, by file name.
    let in_image: BTreeSet<String> = placed
        .iter()
        .filter_map(|path| Path::new(path).file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    while let Some(name) = wanted.pop() {
        if in_image.contains(&name) {
            continue;
        }
        let (path, guest) = libraries
            .get(&name)
            .ok_or_else(|| format!("a program needs {name}, which none of its packages holds"))?;
        if !placed.insert(guest.clone()) {
            continue;
        }
        // The file a link names, under the name the loader asks for.
        let real = fs::canonicalize(path)?;
        wanted.extend(crate::stress::needed(&real)?);
        files.push((guest.clone(), fs::read(&real)?));
    }
    for &(package, inside) in TREES {
        collect_tree(&roots[package], Path::new(inside), &mut placed, &mut files)?;
    }
    Ok(files)
}

/// Adds the file or folder `inside` of the package at `root` (regular
/// files only, links followed within the package), skipping
/// [`PYTHON_LEFT_OUT`] and what is placed already.
fn collect_tree(
    root: &Path,
    inside: &Path,
    placed: &mut BTreeSet<String>,
    files: &mut Vec<(String, Vec<u8>)>,
) -> Result<()> {
    let host = root.join(inside);
    let Ok(metadata) = fs::metadata(&host) else {
        if fs::symlink_metadata(&host).is_ok() {
            // A link to a file of a package not taken (Python's
            // `_sysconfigdata` links into libpython3.11-dev): no check
            // reads it.
            return Ok(());
        }
        return Err(format!("{} is missing", host.display()).into());
    };
    if metadata.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(&host)?
            .flatten()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for entry in entries {
            let name = entry.file_name().unwrap_or_default().to_string_lossy();
            if PYTHON_LEFT_OUT.contains(&name.as_ref()) || name == "__pycache__" {
                continue;
            }
            collect_tree(root, &inside.join(name.as_ref()), placed, files)?;
        }
        return Ok(());
    }
    let guest = inside.to_string_lossy().into_owned();
    if placed.insert(guest.clone()) {
        files.push((guest, fs::read(&host)?));
    }
    Ok(())
}

/// What the script prints when every program did its work: each line
/// must appear, in this order.
pub const EXPECTED: &[&str] = &[
    "sqlite wal",
    "sqlite 500|375250",
    "sqlite index t_x",
    "sqlite integrity ok",
    "make built a b c",
    "tar gzip 640 1000000000 hello",
    "tar xz 640 1000000000 hello",
    "python subprocess hi threads 4950 json {\"a\": [1, 2], \"b\": null}",
    "perl a=1,b=2 matched 42",
    "tcc compiled hello 42",
    "tcc run hello 42",
    "programs done",
];

/// The script the scenario runs (`/etc/spindle-exec`): each program's
/// work, its answer on one line that [`EXPECTED`] names, and the end of
/// its output after a failure.
pub fn guest_script() -> String {
    r#"export PATH=/opt/debian/bin:/bin:/usr/bin HOME=/tmp PYTHONHOME=/usr
cd /tmp
fail() { echo "program failed: $1"; tail -5 /tmp/out 2>/dev/null | sed 's/^/  | /'; }

# sqlite3: a database file, WAL mode, a transaction, an index.
sqlite3 /tmp/t.db "PRAGMA journal_mode=WAL;" > /tmp/out 2>&1 && echo "sqlite $(cat /tmp/out)" || fail sqlite3
sqlite3 /tmp/t.db "CREATE TABLE t(x INTEGER); BEGIN; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1000) INSERT INTO t SELECT x FROM c; COMMIT; CREATE INDEX t_x ON t(x);" > /tmp/out 2>&1 || fail sqlite3-write
sqlite3 /tmp/t.db "SELECT count(*), sum(x) FROM t WHERE x > 500;" > /tmp/out 2>&1 && echo "sqlite $(cat /tmp/out)" || fail sqlite3-read
sqlite3 /tmp/t.db "SELECT name FROM sqlite_master WHERE type='index';" > /tmp/out 2>&1 && echo "sqlite index $(cat /tmp/out)" || fail sqlite3-index
sqlite3 /tmp/t.db "PRAGMA integrity_check;" > /tmp/out 2>&1 && echo "sqlite integrity $(cat /tmp/out)" || fail sqlite3-check

# GNU make, three targets built in parallel by recipes.
mkdir -p /tmp/mk && cd /tmp/mk
printf 'all: a b c\n\tcat a b c | tr "\\n" " " > all\n%%:\n\techo $@ > $@\n' > Makefile
make -j2 > /tmp/out 2>&1 && echo "make built $(cat all | sed 's/ *$//')" || fail make
cd /tmp

# GNU tar: modes and times kept, through gzip and through xz.
mkdir -p /tmp/src && echo hello > /tmp/src/f && chmod 640 /tmp/src/f && touch -d @1000000000 /tmp/src/f
for kind in gzip:z xz:J; do
  name=${kind%%:*}; flag=${kind##*:}
  rm -rf /tmp/x && mkdir /tmp/x
  tar c${flag}f /tmp/a.tar -C /tmp src > /tmp/out 2>&1 && tar x${flag}pf /tmp/a.tar -C /tmp/x >> /tmp/out 2>&1 \
    && echo "tar $name $(stat -c '%a %Y' /tmp/x/src/f) $(cat /tmp/x/src/f)" || fail tar-$name
done

# python3: a child process, threads, json.
python3 -c '
import json, subprocess, threading
out = subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip()
sums = []
def work(n): sums.append(sum(range(n)))
threads = [threading.Thread(target=work, args=(100,)) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
assert sums == [4950] * 4, sums
print("python subprocess", out, "threads", sums[0], "json", json.dumps({"a": [1, 2], "b": None}))
' > /tmp/out 2>&1 && cat /tmp/out || fail python3

# perl: hashes, sorting, a regular expression.
perl -e 'my %h = (b => 2, a => 1); my ($n) = "x=42;" =~ /x=(\d+)/;
  print "perl ", join(",", map { "$_=$h{$_}" } sort keys %h), " matched $n\n"' > /tmp/out 2>&1 && cat /tmp/out || fail perl

# tcc: compile a C program and run it; compile and run in memory.
printf '#include <stdio.h>\nint main(void) { printf("hello %%d\\n", 6 * 7); return 0; }\n' > /tmp/hello.c
tcc -o /tmp/hello /tmp/hello.c > /tmp/out 2>&1 && /tmp/hello > /tmp/out 2>&1 && echo "tcc compiled $(cat /tmp/out)" || fail tcc
tcc -run /tmp/hello.c > /tmp/out 2>&1 && echo "tcc run $(cat /tmp/out)" || fail tcc-run

echo "programs done"
"#
    .to_string()
}
