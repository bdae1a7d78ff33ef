//! Transparent huge pages for the heap of a large replay, asked for through glibc's own switch.
//!
//! A replay's state grows with the flows it meets (about 76 MiB at 400,000 flows), and every
//! 4 KiB page of it is first touched by a page fault: 1.7–2.4 µs each on the virtual machines
//! the figures of issue 13 come from, a tenth of `analyze`'s time at 400,000 flows. Where the
//! kernel gives huge pages only to memory that asks for them (`madvise` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`, the default of several distributions),
//! glibc's malloc asks when its tunable `glibc.malloc.hugetlb=1` is set. glibc reads tunables
//! only from the environment, at start-up (there is no `mallopt` for this one, and asking the
//! kernel directly, `madvise`, would need unsafe code). So `analyze` on capture files large
//! enough to hold that many flows runs itself again, once, with the tunable added: the same
//! arguments, standard streams and process. (`inspect` gained nothing measurable from it.)
//!
//! Measured on `bench/scale.sh`'s captures (`dist` builds with and without this, 11 to 21
//! alternating pairs): 400,000 flows 0.886× to 0.940× wall (the machine's fast and slow
//! phases) for 3.4 MiB more peak RSS; 2,000 flows 0.988× to 0.998×; 1 KiB frames over 64 QPs
//! 0.994×. Starting again costs about 1.5 ms, nothing beside a replay of a capture this large.
//!
//! Not where the kernel hands free memory back to its hypervisor (virtio-balloon free page
//! reporting, as on the Firecracker machines these figures come from). About two seconds after
//! a process frees memory, its free 2 MiB blocks are reported, and the hypervisor takes them
//! back; a huge page made of one is then filled again by the hypervisor, page by page, on its
//! first touch: 80 MiB in 140–160 ms instead of 3.5 ms, where 4 KiB pages, which the kernel
//! takes from the small free pieces it does not report, cost 25 ms whatever came before. So
//! the tunable made `analyze` at 400,000 flows fast when run again at once (0.912×, 11 pairs
//! back to back) and slow when run once after a pause, as a user does (0.29 s against 0.21 s,
//! 5 runs each after 5 s idle); `--tap` on the same capture lost both ways (1.05× back to back,
//! 0.87 s against 0.78 s after a pause). Without it the run takes the same time either way.

use std::ffi::OsString;
use std::path::Path;

use crate::cli::{Cli, Command};

/// Captures smaller than this (all files together) are replayed as they are: too few frames
/// for enough flows to fault much, and the start-up again would show.
pub const LARGE_CAPTURES: u64 = 256 << 20;

/// The tunable, as glibc spells it.
const TUNABLE: &str = "glibc.malloc.hugetlb";

/// Runs the program again with glibc's huge-page tunable when [`worth_it`] says so; returns
/// when it does not, or when the new start failed (the run then goes on without it).
pub fn reexec_if_worth_it(cli: &Cli) {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    let tunables = std::env::var_os("GLIBC_TUNABLES");
    let thp = || std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok();
    let machine = Machine {
        thp,
        reports_free_pages,
    };
    let Some(tunables) = worth_it(cli, machine, tunables.as_deref(), file_len) else {
        return;
    };
    reexec(tunables);
}

#[cfg(unix)]
fn reexec(tunables: OsString) {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    // `exec` returns only on failure: the run goes on here, without huge pages
    let _ = std::process::Command::new(exe)
        .arg0(arg0)
        .args(args)
        .env("GLIBC_TUNABLES", tunables)
        .exec();
}

#[cfg(not(unix))]
fn reexec(_: OsString) {}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// The virtio feature bit of free page reporting (`VIRTIO_BALLOON_F_REPORTING`).
const BALLOON_REPORTING: usize = 5;

/// Whether a virtio balloon that the kernel drives offers free page reporting: its `features`
/// file in sysfs is one `0`/`1` character per feature bit, bit 0 first.
pub fn reports_free_pages() -> bool {
    balloon_reports_free_pages(Path::new("/sys/bus/virtio/drivers/virtio_balloon"))
}

/// [`reports_free_pages`] with the driver's directory given (its devices' links in it).
fn balloon_reports_free_pages(driver: &Path) -> bool {
    let Ok(devices) = std::fs::read_dir(driver) else {
        return false;
    };
    devices.flatten().any(|d| {
        std::fs::read(d.path().join("features"))
            .is_ok_and(|f| f.get(BALLOON_REPORTING) == Some(&b'1'))
    })
}

/// What [`worth_it`] asks of the machine, read only when the command could use huge pages:
/// the kernel's transparent-huge-page mode (the `enabled` file, the chosen one in brackets),
/// then whether it reports free pages to a hypervisor.
struct Machine<T, R> {
    thp: T,
    reports_free_pages: R,
}

/// The `GLIBC_TUNABLES` to start again with, or `None` to go on as we are: `machine` is read
/// last, only for a large `analyze`; `tunables` is the environment's, `len` a capture file's
/// size.
///
/// Worth it: `analyze` of capture files (no standard input, no live interface)
/// of [`LARGE_CAPTURES`] or more, with huge pages given on request only (`always` gives them
/// anyway, `never` not at all), a kernel that keeps its free pages (see the module's
/// documentation), and the tunable not set already (by an earlier start, or by a user who
/// chose otherwise).
fn worth_it(
    cli: &Cli,
    machine: Machine<impl FnOnce() -> Option<String>, impl FnOnce() -> bool>,
    tunables: Option<&std::ffi::OsStr>,
    len: impl Fn(&Path) -> Option<u64>,
) -> Option<OsString> {
    if tunables.is_some_and(|t| t.to_string_lossy().contains(TUNABLE)) {
        return None;
    }
    let Command::Analyze(a) = &cli.cmd else {
        return None;
    };
    if a.live.iface.is_some() {
        return None;
    }
    let mut total = 0u64;
    for f in a.captures.iter().chain(&a.tap) {
        if f.as_os_str() == "-" {
            return None;
        }
        total = total.saturating_add(len(f)?);
    }
    if total < LARGE_CAPTURES
        || !(machine.thp)()?.contains("[madvise]")
        || (machine.reports_free_pages)()
    {
        return None;
    }
    let mut out = OsString::new();
    if let Some(t) = tunables.filter(|t| !t.is_empty()) {
        out.push(t);
        out.push(":");
    }
    out.push(TUNABLE);
    out.push("=1");
    Some(out)
}

#[cfg(test)]
mod test {
    use super::*;
    use clap::Parser;

    const MADVISE: &str = "always [madvise] never\n";

    /// A machine whose kernel is in THP mode `text` and keeps its free pages.
    fn mode(text: &'static str) -> Machine<impl FnOnce() -> Option<String>, impl FnOnce() -> bool> {
        Machine {
            thp: move || Some(text.to_owned()),
            reports_free_pages: || false,
        }
    }

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("rocescope").chain(args.iter().copied()))
            .expect("arguments parse")
    }

    fn big(_: &Path) -> Option<u64> {
        Some(LARGE_CAPTURES)
    }

    fn small(_: &Path) -> Option<u64> {
        Some(LARGE_CAPTURES / 2 - 1)
    }

    #[test]
    fn a_large_replay_starts_again_with_the_tunable_added() {
        let analyze = cli(&["analyze", "-f", "json", "a.pcap"]);
        assert_eq!(
            worth_it(&analyze, mode(MADVISE), None, big),
            Some(OsString::from("glibc.malloc.hugetlb=1"))
        );
        let kept = OsString::from("glibc.malloc.arena_max=2");
        assert_eq!(
            worth_it(&analyze, mode(MADVISE), Some(&kept), big),
            Some(OsString::from(
                "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
            ))
        );
        // two files that are large together
        let two = cli(&["analyze", "a.pcap", "b.pcap"]);
        assert!(worth_it(&two, mode(MADVISE), None, |_| Some(LARGE_CAPTURES / 2)).is_some());
        assert!(worth_it(&two, mode(MADVISE), None, small).is_none());
    }

    #[test]
    fn free_page_reporting_is_the_balloons_feature_bit_5() {
        let dir = tempfile::tempdir().expect("temporary directory");
        assert!(!balloon_reports_free_pages(&dir.path().join("absent")));
        let device = dir.path().join("virtio0");
        std::fs::create_dir(&device).expect("device directory");
        // as sysfs shows it on a Firecracker guest: stats queue, deflate on OOM, reporting
        let features = |bits: &str| {
            std::fs::write(device.join("features"), format!("{bits:0<128}\n")).expect("write");
            balloon_reports_free_pages(dir.path())
        };
        assert!(features("01100101"));
        assert!(!features("01100001"), "bit 5 clear");
        assert!(!features("00001000"), "bit 4, not 5");
        // a device without the file, beside one with it
        std::fs::create_dir(dir.path().join("virtio1")).expect("second device");
        assert!(features("00000100"));
    }

    #[test]
    fn otherwise_the_run_goes_on_as_it_is() {
        let analyze = cli(&["analyze", "a.pcap"]);
        // small, unreadable, standard input
        // not even the kernel's mode is read for a run that could not use it
        let unread = || Machine {
            thp: || -> Option<String> { panic!("the kernel's THP mode was read") },
            reports_free_pages: || -> bool { panic!("the virtio balloon's features were read") },
        };
        assert!(worth_it(&analyze, unread(), None, small).is_none());
        assert!(worth_it(&cli(&["dissect", "a.pcap"]), unread(), None, big).is_none());
        // no mode to read (no THP in this kernel)
        let no_thp = Machine {
            thp: || None,
            reports_free_pages: || false,
        };
        assert!(worth_it(&analyze, no_thp, None, big).is_none());
        assert!(worth_it(&analyze, mode(MADVISE), None, |_| None).is_none());
        assert!(worth_it(&cli(&["analyze", "-"]), mode(MADVISE), None, big).is_none());
        // the kernel gives huge pages to all memory, or to none
        assert!(worth_it(&analyze, mode("[always] madvise never\n"), None, big).is_none());
        assert!(worth_it(&analyze, mode("always madvise [never]\n"), None, big).is_none());
        // free 2 MiB blocks go back to the hypervisor, and a huge page's first touch is slow
        let reporting = Machine {
            thp: || Some(MADVISE.to_owned()),
            reports_free_pages: || true,
        };
        assert!(worth_it(&analyze, reporting, None, big).is_none());
        // set already: by the first start, or by the user either way
        for set in ["glibc.malloc.hugetlb=1", "glibc.malloc.hugetlb=0"] {
            assert!(worth_it(&analyze, mode(MADVISE), Some(&OsString::from(set)), big).is_none());
        }
        // other commands: the inspector's replay gained nothing measurable (bench/inspect-open.sh
        // on 10 M frames: first screen, G and the flow table as fast) for 6 MiB more
        for other in ["dissect", "inspect"] {
            assert!(worth_it(&cli(&[other, "a.pcap"]), mode(MADVISE), None, big).is_none());
        }
    }
}
