//! Hostile and odd inputs and interrupted outputs, through the built binary (issue 15): inputs
//! that are not regular files, a file that shrinks while it is read, outputs killed or starved
//! mid-write, and `inspect` without a terminal. Each ends in one line on stderr and exit 2 (or a
//! stream read as a stream), never a panic, and never a half-written file under the final name.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn demo(name: &str) -> PathBuf {
    root().join("captures").join(name)
}

/// Asserts the run failed with exit 2 and exactly one line on stderr (no panic); returns it.
fn one_line_error(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: status {:?}, stderr {err:?}",
        out.status
    );
    assert_eq!(err.lines().count(), 1, "{what}: stderr {err:?}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(err.starts_with("rocescope: "), "{what}: {err}");
    err
}

/// What is left in `dir` besides the files named `keep`.
fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".toml"))
        .collect()
}

/// A scenario of about `messages` × 16 frames of 1 KiB (one RC WRITE stream).
fn big_scenario(dir: &Path, messages: u32) -> PathBuf {
    let text = fs::read_to_string(root().join("generator/scenarios/clean_write.toml"))
        .unwrap()
        .replace("messages = 60", &format!("messages = {messages}"))
        .replace(
            "delay_ns = 500 ",
            "delay_ns = 500\nstop_ns = 3600000000000\nmax_frames = 100000000\n",
        );
    let path = dir.join("big.toml");
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_directory_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [&["dissect"][..], &["analyze", "-f", "json"], &["inspect"]] {
        let out = bin()
            .args(cmd)
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = one_line_error(&out, &format!("{cmd:?} on a directory"));
        assert!(err.contains("is a directory"), "{err}");
    }
}

#[test]
fn a_device_is_refused_in_one_line() {
    for dev in ["/dev/zero", "/dev/null"] {
        for cmd in [&["dissect"][..], &["analyze", "-f", "json"]] {
            let out = bin().args(cmd).arg(dev).output().unwrap();
            let err = one_line_error(&out, &format!("{cmd:?} {dev}"));
            assert!(err.contains(dev), "{err}");
        }
    }
}

#[test]
fn a_fifo_is_read_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("frames.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let capture = demo("mixed.pcap");
    let expected = bin()
        .args(["analyze", "-f", "json"])
        .arg(&capture)
        .output()
        .unwrap();
    assert!(expected.status.success());
    let writer = {
        let (capture, fifo) = (capture.clone(), fifo.clone());
        std::thread::spawn(move || fs::write(&fifo, fs::read(&capture).unwrap()).unwrap())
    };
    let out = bin()
        .args(["analyze", "-f", "json"])
        .arg(&fifo)
        .output()
        .unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = |o: &Output| -> serde_json::Value { serde_json::from_slice(&o.stdout).unwrap() };
    let (mut got, mut want) = (json(&out), json(&expected));
    // The report names its input; everything else is the same.
    got["capture"]["files"] = serde_json::Value::Null;
    want["capture"]["files"] = serde_json::Value::Null;
    assert_eq!(got, want);
    // The inspector reads frames at random: it says so instead of waiting on the stream.
    let out = bin()
        .arg("inspect")
        .arg(&fifo)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = one_line_error(&out, "inspect on a FIFO");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_file_that_shrinks_while_read_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = big_scenario(dir.path(), 2_500); // about 40k frames, 45 MB
    let capture = dir.path().join("big.pcap");
    let generated = bin()
        .args(["-q", "generate"])
        .arg(&scenario)
        .arg("-o")
        .arg(&capture)
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let size = fs::metadata(&capture).unwrap().len();
    assert!(
        size > 30 << 20,
        "a capture of {size} bytes is too small to shrink under the reader"
    );
    // The reader runs ahead of the output by a few MiB at most: with the output held back
    // by an unread pipe, it is far from the end when the file is cut to 60 %.
    let mut child: Child = bin()
        .args(["dissect", "-f", "jsonl"])
        .arg(&capture)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.starts_with('{'), "{first}");
    fs::OpenOptions::new()
        .write(true)
        .open(&capture)
        .unwrap()
        .set_len(size * 6 / 10)
        .unwrap();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "stderr {err:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("shrank while being read"), "{err}");
}

/// `rocescope generate` of a big scenario into `dir/out.pcap`, stopped by `signal` once the
/// temporary file has data; returns what remains in `dir`.
fn interrupted_generate(signal: &str) -> (Vec<String>, Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = big_scenario(dir.path(), 200_000); // millions of frames: seconds of writing
    let out = dir.path().join("out.pcap");
    let mut child = bin()
        .args(["-q", "generate"])
        .arg(&scenario)
        .arg("-o")
        .arg(&out)
        .arg("--truth")
        .arg(dir.path().join("out.truth.json"))
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Wait until the partial file holds something, so the signal lands mid-write.
    loop {
        let partial = leftovers(dir.path())
            .into_iter()
            .find(|n| n.ends_with(".partial"))
            .and_then(|n| fs::metadata(dir.path().join(n)).ok())
            .is_some_and(|m| m.len() > 1 << 20);
        if partial {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "generate ended before it was interrupted"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no partial output after 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !out.exists(),
        "the final name exists before the output is complete"
    );
    let signal = match signal {
        "KILL" => Signal::SIGKILL,
        "TERM" => Signal::SIGTERM,
        "INT" => Signal::SIGINT,
        other => panic!("signal {other}"),
    };
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
    let status = child.wait().unwrap();
    (leftovers(dir.path()), status.code())
}

#[test]
fn a_killed_generate_leaves_nothing_under_the_final_name() {
    let (left, _) = interrupted_generate("KILL");
    assert!(
        !left
            .iter()
            .any(|n| n == "out.pcap" || n == "out.truth.json"),
        "{left:?}"
    );
    // SIGKILL cannot be caught: the temporary file may remain, under its own name.
    assert!(
        left.iter()
            .all(|n| n.starts_with(".out.pcap.") && n.ends_with(".partial")),
        "{left:?}"
    );
}

#[test]
fn sigterm_and_sigint_remove_the_partial_output() {
    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let (left, status) = interrupted_generate(signal);
        assert!(left.is_empty(), "after SIG{signal}: {left:?}");
        assert_eq!(status, Some(code), "exit status after SIG{signal}");
    }
}

/// The binary with `args`, its files limited to `blocks` 512-byte blocks (RLIMIT_FSIZE): a
/// size-limited file stands for a full disk, since writes past it fail with EFBIG once SIGXFSZ
/// is ignored (an ignored signal stays ignored across exec).
fn on_a_full_disk(blocks: u32, args: &[&std::ffi::OsStr]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_is_one_line_naming_the_file_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = big_scenario(dir.path(), 300);
    let (out, report) = (dir.path().join("out.pcap"), dir.path().join("report.json"));
    let capture = demo("mixed.pcap");
    let generate: Vec<&std::ffi::OsStr> = vec![
        "generate".as_ref(),
        scenario.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ];
    let analyze: Vec<&std::ffi::OsStr> = vec![
        "analyze".as_ref(),
        "-f".as_ref(),
        "json".as_ref(),
        "-o".as_ref(),
        report.as_os_str(),
        capture.as_os_str(),
    ];
    // a capture of ~1.4 MB into 512 KiB, a report of a few KiB into 512 bytes
    for (blocks, args, name) in [(1024, generate, "out.pcap"), (1, analyze, "report.json")] {
        let run = on_a_full_disk(blocks, &args);
        let err = one_line_error(&run, &format!("{args:?} onto a full disk"));
        assert!(err.contains(name), "{err}");
        let left = leftovers(dir.path());
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn a_report_appears_only_when_complete() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let run = bin()
        .args(["analyze", "-f", "json", "-o"])
        .arg(&report)
        .arg(demo("mixed.pcap"))
        .output()
        .unwrap();
    assert!(run.status.success());
    let text = fs::read_to_string(&report).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap();
    assert_eq!(leftovers(dir.path()), vec!["report.json".to_owned()]);
    // An input error after the report was started: the old report stays as it was.
    let run = bin()
        .args(["analyze", "-f", "json", "-o"])
        .arg(&report)
        .arg(dir.path().join("missing.pcap"))
        .output()
        .unwrap();
    one_line_error(&run, "analyze of a missing file");
    assert_eq!(fs::read_to_string(&report).unwrap(), text);
}

#[test]
fn inspect_without_a_terminal_says_so_in_one_line() {
    let out = bin()
        .arg("inspect")
        .arg(demo("mixed.pcap"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let err = one_line_error(&out, "inspect without a terminal");
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "the screen was taken over: {:?}",
        out.stdout.len()
    );
}

#[test]
fn inspect_fails_on_a_bad_file_as_dissect_does() {
    let dir = tempfile::tempdir().unwrap();
    let not_capture = root().join("README.md");
    let empty = dir.path().join("empty.pcap");
    fs::write(&empty, b"").unwrap();
    // unreadable: a path through a regular file (ENOTDIR); as a non-root user also a file
    // without read permission (root reads it anyway)
    let through_a_file = root().join("README.md").join("x.pcap");
    let no_read = dir.path().join("no-read.pcap");
    fs::copy(demo("mixed.pcap"), &no_read).unwrap();
    fs::set_permissions(
        &no_read,
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    let mut paths = vec![
        dir.path().join("missing.pcap"),
        not_capture,
        empty,
        through_a_file,
    ];
    if fs::File::open(&no_read).is_err() {
        paths.push(no_read);
    }
    for path in paths {
        let dissect = bin().arg("dissect").arg(&path).output().unwrap();
        let inspect = bin()
            .arg("inspect")
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let want = one_line_error(&dissect, "dissect");
        let got = one_line_error(&inspect, "inspect");
        assert_eq!(got, want, "{}", path.display());
        assert!(inspect.stdout.is_empty());
    }
}

#[test]
fn devices_are_written_in_place_and_links_followed() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let scenario = big_scenario(dir.path(), 5);
    // -o /dev/null: a device is written, never replaced by a renamed file
    let run = bin()
        .args(["-q", "generate"])
        .arg(&scenario)
        .args(["-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device(),
        "/dev/null was replaced"
    );
    let partial = fs::read_dir("/dev").unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".partial")
    });
    assert!(!partial, "a temporary file was left in /dev");
    // -o /dev/stdout: the report goes to standard output
    let run = bin()
        .args(["analyze", "-f", "json", "-o", "/dev/stdout"])
        .arg(demo("mixed.pcap"))
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&run.stdout).unwrap();
    // -o LINK: the file the link names is replaced; the link stays a link
    let real = dir.path().join("real.json");
    let link = dir.path().join("link.json");
    fs::write(&real, "old").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let run = bin()
        .args(["analyze", "-f", "json", "-o"])
        .arg(&link)
        .arg(demo("mixed.pcap"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    serde_json::from_str::<serde_json::Value>(&fs::read_to_string(&real).unwrap()).unwrap();
}
