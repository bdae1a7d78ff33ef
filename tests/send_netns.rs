//! `rocescope send` on a veth pair inside a private network namespace: what comes out of the
//! other end (captured with dumpcap) equals what `generate` writes, byte for byte, in order.
//!
//! Needs root, `ip` (iproute2) and dumpcap (Wireshark); without them the test prints why and
//! passes. Both ends of the veth live in one fresh namespace with IPv6 off and no addresses, so
//! nothing but the sent frames crosses the pair and nothing leaves the namespace. A guard deletes
//! the namespace (and with it the veth pair) however the test ends.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocescope::capture::CaptureReader;
use rocescope::sink::MemorySink;
use rocescope_generator::Scenario;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("generator/scenarios")
        .join(name)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.trim_ascii() == b"0")
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A network namespace, deleted (with its interfaces) on drop.
struct Netns(String);

impl Netns {
    /// Makes a namespace with a unique name, or `None` when namespaces cannot be made here.
    fn new() -> Option<Netns> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("rocescope-send-{}-{nanos}", std::process::id());
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "send_netns: skipped: `ip netns add` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Netns(name))
    }

    /// `ip netns exec NAME program …`
    fn exec(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0, program]);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.0])
            .stderr(Stdio::null())
            .status();
    }
}

/// Kills a child process on drop (the capture, if the test fails before it ends).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Namespace with veth pair `tx0` <-> `rx0`, both up, jumbo MTU, IPv6 off (no router
/// solicitations or other kernel chatter), no addresses.
fn veth_namespace() -> Option<Netns> {
    let ns = Netns::new()?;
    run(ns.exec("sysctl").args([
        "-qw",
        "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1",
    ]));
    run(Command::new("ip").args([
        "-n", &ns.0, "link", "add", "tx0", "mtu", "9000", "type", "veth", "peer", "name", "rx0",
        "mtu", "9000",
    ]));
    for dev in ["tx0", "rx0"] {
        run(Command::new("ip").args(["-n", &ns.0, "link", "set", dev, "up"]));
    }
    Some(ns)
}

/// The first `count` frames `generate` writes for the scenario at `path` with `seed`.
fn generated(path: &Path, seed: u64, count: usize) -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(path).unwrap();
    let sc = Scenario::from_toml(&text, &path.display().to_string()).unwrap();
    let mut sink = MemorySink::new();
    rocescope::generate::generate_into(&sc, seed, &mut sink).unwrap();
    sink.frames.into_iter().take(count).map(|f| f.1).collect()
}

fn read_capture(path: &Path) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut frames = Vec::new();
    while let Some(f) = r.next_frame() {
        frames.push(f.unwrap().data.to_vec());
    }
    frames
}

/// The transmit paths `send --tx` picks, each checked on its own namespace.
#[test]
fn sent_frames_arrive_byte_for_byte() {
    if !is_root() {
        eprintln!("send_netns: skipped: not root (sending and namespaces need root)");
        return;
    }
    if !have("ip") || !have("dumpcap") {
        eprintln!("send_netns: skipped: needs `ip` (iproute2) and `dumpcap` (wireshark)");
        return;
    }
    // mixed.toml: VLAN tags, PFC, truncated frames (sent as the bytes they keep), several QPs.
    let mixed = scenario_path("mixed.toml");
    assert_arrive(&mixed, "packet", "(packet socket)");
    if xdp_refused() {
        return;
    }
    assert_arrive(&mixed, "xdp", "(AF_XDP)");
    assert_arrive(&mixed, "auto", "(AF_XDP)");
    // Frames longer than an AF_XDP chunk (4096 bytes) after shorter ones: they go in two
    // chunks where the kernel takes frames in pieces (Linux 6.6), else the sender moves to the
    // packet socket at the first; either way no frame overtakes another.
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("mixed-4k.toml");
    let text = std::fs::read_to_string(&mixed).unwrap();
    let text = text
        .replace("pmtu = 2048", "pmtu = 4096")
        .replace("size = 4000", "size = 6000");
    std::fs::write(&long, text).unwrap();
    let want = generated(&long, 5, 400);
    let first_long = want.iter().position(|f| f.len() > 4096);
    assert!(
        first_long.is_some_and(|i| i > 0),
        "no long frame after a short one: {first_long:?}"
    );
    assert_arrive(&long, "xdp", "(AF_XDP");
}

/// Whether this kernel refuses `AF_XDP` sockets (said, and the `AF_XDP` cases skipped).
fn xdp_refused() -> bool {
    let Some(ns) = veth_namespace() else {
        return true;
    };
    let out = ns
        .exec(BIN)
        .args(["send", scenario_path("mixed.toml").to_str().unwrap()])
        .args(["--iface", "tx0", "--count", "1"])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    let refused = summary.contains("AF_XDP refused");
    if refused {
        eprintln!("send_netns: AF_XDP cases skipped: {}", summary.trim());
    }
    refused
}

/// `send --tx TX` of the first 400 frames of `scenario` arrives at the veth's other end as
/// `generate` writes them, and its summary names the path (`path`).
fn assert_arrive(scenario: &Path, tx: &str, path: &str) {
    let Some(ns) = veth_namespace() else {
        return;
    };
    let seed = 5;
    let want = generated(scenario, seed, 400);
    assert!(want.len() > 100, "scenario too short: {}", want.len());

    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("rx.pcapng");
    let mut cap = KillOnDrop(
        ns.exec("dumpcap")
            .args(["-q", "-i", "rx0", "-c", &want.len().to_string(), "-w"])
            .arg(&pcap)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Wait until dumpcap says it is capturing.
    let stderr = cap.0.stderr.take().unwrap();
    let (lines, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains("Capturing on") => break,
            Ok(line) => seen.push(line),
            Err(_) => panic!("dumpcap did not start: {seen:?}"),
        }
    }
    // "Capturing on" comes just before the socket is attached: give it a moment.
    std::thread::sleep(Duration::from_millis(500));

    let out = run(ns.exec(BIN).args([
        "send",
        scenario.to_str().unwrap(),
        "--iface",
        "tx0",
        "--rate",
        "20Kpps",
        "--count",
        &want.len().to_string(),
        "--seed",
        &seed.to_string(),
        "--tx",
        tx,
    ]));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains(&format!("sent {} frames", want.len())) && summary.contains(path),
        "--tx {tx}: {summary}"
    );

    // dumpcap stops by itself after `count` frames.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = cap.0.try_wait().unwrap() {
            assert!(status.success(), "dumpcap failed");
            break;
        }
        if Instant::now() >= deadline {
            let _ = cap.0.kill();
            let _ = cap.0.wait();
            panic!(
                "--tx {tx}: dumpcap got {} of {} frames; stderr: {:?}",
                read_capture(&pcap).len(),
                want.len(),
                rx.try_iter().collect::<Vec<_>>()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = read_capture(&pcap);
    assert_eq!(got.len(), want.len(), "--tx {tx}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g == w,
            "--tx {tx}: frame {} differs:\n got {g:02x?}\nwant {w:02x?}",
            i + 1
        );
    }
    drop(ns);
}

/// A link that goes down while `send` sends (the veth's peer set down): the send ends at once
/// with one line, through either path. The packet socket's sender used to wait out its 10 s
/// stall, and AF_XDP's went on counting every later frame dropped and exited 0.
#[test]
fn link_going_down_while_sending_is_one_clear_line() {
    if !is_root() || !have("ip") {
        eprintln!("send_netns: skipped: needs root and `ip` (iproute2)");
        return;
    }
    let paths: &[&str] = if xdp_refused() {
        &["packet"]
    } else {
        &["packet", "xdp"]
    };
    for tx in paths {
        let Some(ns) = veth_namespace() else {
            return;
        };
        let start = Instant::now();
        // mixed.toml's 600 frames at 200 pps would take 3 s; the link goes down after 0.5 s
        let send = ns
            .exec(BIN)
            .arg("send")
            .arg(scenario_path("mixed.toml"))
            .args(["--iface", "tx0", "--rate", "200pps", "--count", "600"])
            .args(["--tx", tx])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        run(Command::new("ip").args(["-n", &ns.0, "link", "set", "rx0", "down"]));
        let out = send.wait_with_output().unwrap();
        let took = start.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--tx {tx}: {err}");
        // one line, which says how far the send got: about 100 frames in 0.5 s at 200 pps
        let line = err.trim_end();
        let sent = line
            .strip_prefix("rocescope: sending on tx0: stopped after ")
            .and_then(|rest| rest.split_once(" frames ("))
            .and_then(|(n, _)| n.parse::<u32>().ok());
        assert!(
            sent.is_some_and(|n| (20..600).contains(&n)),
            "--tx {tx}: {line}"
        );
        assert!(
            line.ends_with(
                " s): tx0 lost its carrier while sending (its link went down): no frame would leave"
            ),
            "--tx {tx}: {line}"
        );
        assert!(took < Duration::from_secs(3), "--tx {tx}: took {took:?}");
    }
}

/// A queue that another `AF_XDP` socket holds (a second `send` on the same interface): the
/// sender waits out the bind's retries, then sends through the packet socket, and its summary
/// says why; `--tx xdp` fails in one line instead.
#[test]
fn a_busy_queue_falls_back_to_the_packet_socket() {
    if !is_root() || !have("ip") {
        eprintln!("send_netns: skipped: needs root and `ip` (iproute2)");
        return;
    }
    if xdp_refused() {
        return;
    }
    let Some(ns) = veth_namespace() else {
        return;
    };
    let scenario = scenario_path("clean_write.toml");
    let send = |extra: &[&str]| {
        let mut c = ns.exec(BIN);
        c.arg("send")
            .arg(&scenario)
            .args(["--iface", "tx0"])
            .args(extra);
        c
    };
    // holds queue 0 for about 4 s (400 frames at 100 pps)
    let mut first = KillOnDrop(
        send(&["--rate", "100pps", "--count", "400"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // until the first has bound its socket
    std::thread::sleep(Duration::from_millis(500));
    let out = run(&mut send(&["--count", "50"]));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("sent 50 frames")
            && summary
                .contains("(packet socket; AF_XDP refused: AF_XDP bind: another AF_XDP socket holds the interface's queue 0 (another send on it?))"),
        "{summary}"
    );
    let out = send(&["--count", "50", "--tx", "xdp"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "rocescope: opening a raw socket on tx0: AF_XDP bind: another AF_XDP socket holds the interface's queue 0 (another send on it?)"
    );
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the first send ended too soon"
    );
    let _ = first.0.kill();
}

/// A link without carrier (the veth's peer down) or a device that is down: `send` says so in
/// one line and exits 2 at once. The kernel would take no frame from the ring, and the sender
/// used to wait for room in it forever.
#[test]
fn link_down_is_one_clear_line() {
    if !is_root() || !have("ip") {
        eprintln!("send_netns: skipped: needs root and `ip` (iproute2)");
        return;
    }
    let Some(ns) = veth_namespace() else {
        return;
    };
    let send = || {
        let start = Instant::now();
        let out = ns
            .exec(BIN)
            .arg("send")
            .arg(scenario_path("clean_write.toml"))
            .args(["--iface", "tx0"])
            .output()
            .unwrap();
        (out, start.elapsed())
    };
    for (down, want) in [
        (
            "rx0",
            "rocescope: tx0 has no carrier (its link is down): no frame would leave",
        ),
        (
            "tx0",
            "rocescope: tx0 is down: nothing can be sent on it (ip link set tx0 up)",
        ),
    ] {
        run(Command::new("ip").args(["-n", &ns.0, "link", "set", down, "down"]));
        let (out, took) = send();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{down} down: {err}");
        assert_eq!(err.trim_end(), want, "{down} down");
        assert!(took < Duration::from_secs(5), "{down} down: took {took:?}");
    }
}

/// A frame longer than the interface's MTU lets through (a scenario's PMTU above the link's)
/// ends the send in one line that says so in the interface's terms, through either path; the
/// kernel itself only says "Message too long".
#[test]
fn a_frame_over_the_mtu_is_one_clear_line() {
    if !is_root() || !have("ip") {
        eprintln!("send_netns: skipped: needs root and `ip` (iproute2)");
        return;
    }
    let mixed = scenario_path("mixed.toml");
    // mixed.toml's PMTU is 2048: its data frames are longer than an MTU of 1500 lets through
    let first_long = generated(&mixed, 1, 400)
        .iter()
        .position(|f| f.len() > 1518);
    let Some(first_long) = first_long else {
        panic!("mixed.toml has no frame over 1518 bytes in its first 400");
    };
    let paths: &[&str] = if xdp_refused() {
        &["packet"]
    } else {
        &["packet", "xdp", "auto"]
    };
    for tx in paths {
        let Some(ns) = veth_namespace() else {
            return;
        };
        run(Command::new("ip").args(["-n", &ns.0, "link", "set", "tx0", "mtu", "1500"]));
        let out = ns
            .exec(BIN)
            .arg("send")
            .arg(&mixed)
            .args([
                "--iface", "tx0", "--count", "400", "--seed", "1", "--tx", tx,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.trim_end();
        assert_eq!(out.status.code(), Some(2), "--tx {tx}: {err}");
        assert!(!line.contains('\n'), "--tx {tx}: {err}");
        assert!(
            line.starts_with("rocescope: sending on tx0: stopped after "),
            "--tx {tx}: {line}"
        );
        // the frames before it went; those of its own hand-over are not counted
        let sent = line
            .split_once("stopped after ")
            .and_then(|(_, rest)| rest.split_once(' '))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        assert!(
            sent.is_some_and(|n| n <= first_long),
            "--tx {tx}: {line} (first long frame: {first_long})"
        );
        let (_, said) = line.split_once(" s): ").unwrap_or_default();
        let len = said
            .strip_prefix("tx0 does not take a frame of ")
            .and_then(|rest| rest.split_once(' '))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        assert!(len.is_some_and(|n| n > 1518), "--tx {tx}: {line}");
        assert!(
            said.ends_with(
                "bytes (its MTU is 1500): raise it (ip link set tx0 mtu 9000) or lower the scenario's pmtu"
            ),
            "--tx {tx}: {line}"
        );
    }
}

/// A native InfiniBand scenario is refused in one line before any interface is opened (its
/// frames would go out with an LRH where the MAC addresses belong).
#[test]
fn infiniband_scenario_is_one_clear_line() {
    let out = Command::new(BIN)
        .args(["send"])
        .arg(scenario_path("ib_fabric.toml"))
        .args(["--iface", "lo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "rocescope: {}: [link] kind = \"ib\" is native InfiniBand, which send cannot transmit (it sends Ethernet frames); generate writes it to a file",
            scenario_path("ib_fabric.toml").display()
        )
    );
}

#[test]
fn unknown_interface_is_one_clear_line() {
    let out = Command::new(BIN)
        .args(["send"])
        .arg(scenario_path("clean_write.toml"))
        .args(["--iface", "no-such-if0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("rocescope: no-such-if0: no such interface; available: "),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn not_root_is_one_clear_line() {
    if !is_root() || !have("setpriv") {
        eprintln!("send_netns: skipped: needs root and setpriv to drop privileges");
        return;
    }
    // A copy the unprivileged user can read and run.
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("rocescope");
    let sc = dir.path().join("s.toml");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::copy(scenario_path("clean_write.toml"), &sc).unwrap();
    for (p, mode) in [
        (dir.path(), 0o755),
        (bin.as_path(), 0o755),
        (sc.as_path(), 0o644),
    ] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    // The unprivileged user must be able to run the copy at all. Exit 126 right
    // after the copy is usually ETXTBSY: another test thread forked while the
    // copy's write descriptor was open, so the child holds it; retry briefly.
    // A root-only TMPDIR would also give 126, which is not our error: skip then.
    let mut probe = None;
    for _ in 0..20 {
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .arg("--version")
            .output()
            .unwrap();
        let ok = out.status.success();
        probe = Some(out);
        if ok {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let probe = probe.unwrap();
    if !probe.status.success() {
        eprintln!(
            "send_netns: skipped: user 65534 cannot run {} ({:?})",
            bin.display(),
            probe.status.code()
        );
        return;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("send")
        .arg(&sc)
        .args(["--iface", "lo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("rocescope: sending needs root or CAP_NET_RAW"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
