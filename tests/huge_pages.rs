//! `analyze` on a capture of `LARGE_CAPTURES` or more starts itself again with glibc's
//! huge-page tunable (src/huge_pages.rs) where the kernel gives huge pages only on request and
//! keeps its free pages. The second start must be invisible: the same report on standard output,
//! the same messages and the same exit status as a run that was told not to
//! (`glibc.malloc.hugetlb=0` already set).

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Output};

use rocescope::huge_pages::LARGE_CAPTURES;
use rocescope::sink::{FrameSink, PcapNgWriter};

/// `frames` as a pcapng (the crate's own writer: Ethernet, 10 µs apart), then blocks of a type
/// no reader knows until the file is `LARGE_CAPTURES` long: their bodies are holes in a sparse
/// file, so the test neither writes nor reads hundreds of megabytes of its own.
fn write_large(path: &Path, frames: &[Vec<u8>]) {
    let file = std::fs::File::create(path).expect("create the capture");
    let mut writer = PcapNgWriter::new(file).expect("pcapng header");
    for (i, f) in (0u64..).zip(frames) {
        writer
            .send(1_700_000_000_000_000_000 + i * 10_000, f)
            .expect("write a frame");
    }
    let mut file = writer.into_inner().expect("flush the frames");
    // below the reader's largest block (64 MiB), a type with the local-use bit set
    const BODY: u64 = 60 << 20;
    let total = u32::try_from(12 + BODY).expect("fits");
    let mut len = file.stream_position().expect("position");
    while len < LARGE_CAPTURES {
        file.write_all(&0x8000_0BADu32.to_le_bytes())
            .expect("write");
        file.write_all(&total.to_le_bytes()).expect("write");
        file.seek(SeekFrom::Current(BODY as i64)).expect("seek");
        file.write_all(&total.to_le_bytes()).expect("write");
        len += 12 + BODY;
    }
    assert!(file.metadata().expect("metadata").len() >= LARGE_CAPTURES);
}

fn analyze(capture: &Path, tunables: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocescope"));
    cmd.args(["analyze", "-f", "json", "--flows", "all"])
        .arg(capture);
    match tunables {
        Some(t) => cmd.env("GLIBC_TUNABLES", t),
        None => cmd.env_remove("GLIBC_TUNABLES"),
    };
    cmd.output().expect("run rocescope")
}

#[test]
fn starting_again_for_huge_pages_changes_nothing_a_user_sees() {
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !thp.contains("[madvise]") {
        eprintln!(
            "notice: transparent huge pages are not madvise-only here ({}): analyze does not \
             start again, and this test only compares two ordinary runs",
            thp.trim()
        );
    } else if rocescope::huge_pages::reports_free_pages() {
        eprintln!(
            "notice: this kernel reports free pages to its hypervisor: analyze does not start \
             again, and this test only compares two ordinary runs"
        );
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let capture = dir.path().join("large.pcapng");
    let frames = common::frames_of(Path::new("captures/loss_gbn.pcap"));
    assert!(!frames.is_empty());
    write_large(&capture, &frames);

    let again = analyze(&capture, None);
    let not = analyze(&capture, Some("glibc.malloc.hugetlb=0"));
    assert_eq!(again.status, not.status);
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        String::from_utf8_lossy(&not.stderr)
    );
    assert_eq!(again.stdout, not.stdout, "the reports differ");
    // a real report of the frames, not an error both runs share
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).expect("a JSON report");
    assert_eq!(report["capture"]["frames"], frames.len());
    assert!(report["flows"].as_array().is_some_and(|f| !f.is_empty()));
}
