//! Live capture (interfaces.md §11): frames from a network interface as a [`FrameSource`], so
//! that `capture`, `analyze -i`, `dissect -i` and `inspect -i` run through the same frame driver
//! as files do.
//!
//! A backend receives what the kernel filter ([`filter`]) kept and copies it out of the kernel's
//! ring into a [`RxBatch`] at once (the ring's block goes back to the kernel before anything
//! else is done with its frames, which is what keeps kernel drops away); [`LiveSource`] then
//! hands the frames out one at a time. Backends:
//! - the Linux packet socket with a memory-mapped TPACKET_V3 ring ([`packet_socket`], the
//!   default; the `netring` crate does the ring);
//! - libpcap ([`libpcap`], cargo feature `libpcap`), the only way to RDMA devices
//!   (`-i mlx5_0`), whose offloaded RoCE traffic never reaches a packet socket.
//!
//! A capture ends at `-c`, at `--duration`, or when [`LiveHandle::stop`] is called (the
//! commands call it on SIGINT and SIGTERM). A stop does not cut what the kernel already holds:
//! the source keeps reading until the ring has been quiet for [`DRAIN_QUIET`], so every frame
//! the kernel counted as received before the stop is delivered. The kernel's drop counter is
//! read as the capture goes ([`LiveHandle::kernel_drops`]): a drop there is a capture drop,
//! never network loss.

pub mod filter;
#[cfg(feature = "libpcap")]
mod libpcap;
#[cfg(feature = "live")]
mod packet_socket;
#[cfg(feature = "live")]
pub(crate) mod tx_socket;

#[cfg(feature = "libpcap")]
pub use libpcap::filter_expression as libpcap_filter_expression;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::capture::CaptureError;
use crate::frame::{Frame, LinkType};
use crate::source::FrameSource;

/// How long a stopped capture waits for the kernel's last frames (its ring hands a block over
/// after at most [`BLOCK_TIMEOUT_MS`]).
pub const DRAIN_QUIET: Duration = Duration::from_millis(5 * BLOCK_TIMEOUT_MS as u64);
/// A partly filled ring block is handed over after this long: the latency of a live display.
pub const BLOCK_TIMEOUT_MS: u32 = 20;
/// Longest wait for frames before the stop flag and the deadline are looked at again.
const POLL: Duration = Duration::from_millis(50);
/// How often the kernel's counters are read.
const STATS_EVERY: Duration = Duration::from_millis(200);
/// The kernel buffer when none is given: 128 MiB (a quarter of a second of 1 KiB frames at
/// 100 Gbit/s).
pub const DEFAULT_BUFFER: u64 = 128 << 20;
/// The snapshot length when none is given: whole frames (as tcpdump's default).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// Which capture backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// libpcap for RDMA devices, the packet socket for everything else.
    #[default]
    Auto,
    PacketSocket,
    Libpcap,
}

/// A validated live input: what to capture and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveConfig {
    pub iface: String,
    /// Bytes kept of each frame.
    pub snaplen: u32,
    /// Everything, not only what rocescope analyzes (`--all`).
    pub all: bool,
    /// Extra RoCEv2 UDP ports the kernel filter keeps.
    pub roce_ports: Vec<u16>,
    pub backend: Backend,
    /// Stop after this many frames.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Bytes of kernel buffer (the packet socket's ring, libpcap's buffer).
    pub buffer: u64,
}

impl LiveConfig {
    /// Capture everything the default filter keeps on `iface`, until stopped.
    #[must_use]
    pub fn new(iface: &str) -> Self {
        LiveConfig {
            iface: iface.to_owned(),
            snaplen: DEFAULT_SNAPLEN,
            all: false,
            roce_ports: Vec::new(),
            backend: Backend::Auto,
            count: None,
            duration: None,
            buffer: DEFAULT_BUFFER,
        }
    }

    /// The kernel filter's instructions.
    ///
    /// # Errors
    /// Too many `--roce-port` values for one program.
    pub fn program(&self) -> Result<Vec<filter::Insn>, String> {
        if self.all {
            Ok(filter::all_program(self.snaplen))
        } else {
            filter::default_program(&self.roce_ports, self.snaplen)
        }
    }
}

/// What a capture has done so far, shared with other threads (periodic summaries, the
/// inspector, a signal handler's stop).
#[derive(Debug, Default)]
struct Shared {
    /// An `Arc` of its own, for signal handlers to set (`signal_hook::flag`).
    stop: Arc<AtomicBool>,
    captured: AtomicU64,
    kernel_drops: AtomicU64,
}

/// A handle on a running [`LiveSource`]: its counters and its stop.
#[derive(Debug, Clone)]
pub struct LiveHandle(Arc<Shared>);

impl LiveHandle {
    /// Ends the capture once what the kernel holds has been read.
    pub fn stop(&self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }

    /// The flag [`stop`](Self::stop) sets, for a signal handler to set directly.
    #[must_use]
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0.stop)
    }

    /// Frames delivered so far.
    #[must_use]
    pub fn captured(&self) -> u64 {
        self.0.captured.load(Ordering::Relaxed)
    }

    /// Frames the kernel dropped (its ring was full) since the capture began.
    #[must_use]
    pub fn kernel_drops(&self) -> u64 {
        self.0.kernel_drops.load(Ordering::Relaxed)
    }
}

/// Frames copied out of the kernel's ring, waiting to be handed out.
#[derive(Debug, Default)]
pub struct RxBatch {
    data: Vec<u8>,
    frames: Vec<RxFrame>,
}

#[derive(Debug, Clone, Copy)]
struct RxFrame {
    time_ns: u64,
    orig_len: u32,
    start: usize,
    end: usize,
}

impl RxBatch {
    /// Appends one frame made of `parts` (a VLAN tag the kernel took off goes back in between
    /// them), `orig_len` bytes on the wire.
    pub fn push(&mut self, time_ns: u64, orig_len: u32, parts: &[&[u8]]) {
        let start = self.data.len();
        for p in parts {
            self.data.extend_from_slice(p);
        }
        self.frames.push(RxFrame {
            time_ns,
            orig_len,
            start,
            end: self.data.len(),
        });
    }

    fn clear(&mut self) {
        self.data.clear();
        self.frames.clear();
    }

    fn len(&self) -> usize {
        self.frames.len()
    }
}

/// Where frames come from.
trait Receiver: Send {
    /// Waits up to `timeout` for frames and appends what came to `batch`.
    fn receive(&mut self, batch: &mut RxBatch, timeout: Duration) -> io::Result<()>;

    /// Frames the kernel dropped since the capture began.
    fn kernel_drops(&mut self) -> io::Result<u64>;

    /// The link type of the frames.
    fn link(&self) -> LinkType;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    /// Stopped or past the deadline; the last frame came at this instant.
    Draining(Instant),
    Done,
}

/// A live interface as a [`FrameSource`]. Frame numbers count from 1; timestamps are the
/// kernel's (nanoseconds).
pub struct LiveSource {
    receiver: Box<dyn Receiver>,
    name: PathBuf,
    link: LinkType,
    batch: RxBatch,
    /// Next frame of `batch` to hand out.
    pos: usize,
    cur: Option<RxFrame>,
    number: u64,
    first_time_ns: Option<u64>,
    shared: Arc<Shared>,
    count: Option<u64>,
    deadline: Option<Instant>,
    state: State,
    stats_at: Instant,
}

impl std::fmt::Debug for LiveSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSource")
            .field("iface", &self.name)
            .field("frames", &self.number)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// Opens `cfg.iface` for capture.
///
/// # Errors
/// One line each: no such interface (naming the ones there are), not permitted (root or
/// `CAP_NET_RAW` is needed), an RDMA device in a build without the `libpcap` feature, a filter
/// that does not fit, or the socket cannot be set up.
pub fn open(cfg: &LiveConfig) -> anyhow::Result<LiveSource> {
    let program = cfg.program().map_err(anyhow::Error::msg)?;
    let rdma = is_rdma_device(&cfg.iface);
    let libpcap = match cfg.backend {
        Backend::Auto => rdma,
        Backend::PacketSocket => false,
        Backend::Libpcap => true,
    };
    let receiver: Box<dyn Receiver> = if libpcap {
        open_libpcap(cfg, rdma)?
    } else {
        if rdma {
            anyhow::bail!(
                "{}: an RDMA device has no packet socket; its traffic is captured through libpcap's RDMA sniffer (--backend libpcap, in a build with `cargo build --features libpcap`)",
                cfg.iface
            );
        }
        open_packet_socket(cfg, &program)?
    };
    let link = receiver.link();
    let now = Instant::now();
    Ok(LiveSource {
        receiver,
        name: PathBuf::from(&cfg.iface),
        link,
        batch: RxBatch::default(),
        pos: 0,
        cur: None,
        number: 0,
        first_time_ns: None,
        shared: Arc::new(Shared::default()),
        count: cfg.count,
        deadline: cfg.duration.map(|d| now + d),
        state: State::Running,
        stats_at: now,
    })
}

#[cfg(feature = "live")]
fn open_packet_socket(
    cfg: &LiveConfig,
    program: &[filter::Insn],
) -> anyhow::Result<Box<dyn Receiver>> {
    Ok(Box::new(packet_socket::PacketSocket::open(cfg, program)?))
}

#[cfg(not(feature = "live"))]
fn open_packet_socket(
    cfg: &LiveConfig,
    _program: &[filter::Insn],
) -> anyhow::Result<Box<dyn Receiver>> {
    anyhow::bail!(
        "{}: this rocescope was built without the `live` feature: it cannot capture",
        cfg.iface
    )
}

#[cfg(feature = "libpcap")]
fn open_libpcap(cfg: &LiveConfig, _rdma: bool) -> anyhow::Result<Box<dyn Receiver>> {
    Ok(Box::new(libpcap::Libpcap::open(cfg)?))
}

#[cfg(not(feature = "libpcap"))]
fn open_libpcap(cfg: &LiveConfig, rdma: bool) -> anyhow::Result<Box<dyn Receiver>> {
    if rdma {
        anyhow::bail!(
            "{}: capturing an RDMA device needs libpcap's RDMA sniffer, and this rocescope was built without it: build with `cargo build --release --features libpcap` (needs the libpcap development package)",
            cfg.iface
        );
    }
    anyhow::bail!(
        "{}: --backend libpcap needs a rocescope built with `cargo build --release --features libpcap`",
        cfg.iface
    )
}

/// An RDMA device (`/sys/class/infiniband/NAME`) that is not also a network interface.
fn is_rdma_device(name: &str) -> bool {
    !name.contains('/')
        && Path::new("/sys/class/infiniband").join(name).exists()
        && !Path::new("/sys/class/net").join(name).exists()
}

/// The network interfaces there are, for "no such interface" messages.
#[must_use]
pub fn interface_names() -> Vec<String> {
    let mut names: Vec<String> = ["/sys/class/net", "/sys/class/infiniband"]
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// "no interface named X; available: a, b" (one line).
#[must_use]
pub fn no_such_interface(name: &str) -> String {
    let names = interface_names();
    format!(
        "{name}: no such interface; available: {}",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )
}

impl LiveSource {
    /// A handle for other threads: counters and stop.
    #[must_use]
    pub fn handle(&self) -> LiveHandle {
        LiveHandle(Arc::clone(&self.shared))
    }

    /// The interface's link type.
    #[must_use]
    pub fn link(&self) -> LinkType {
        self.link
    }

    /// The interface name.
    #[must_use]
    pub fn iface(&self) -> &Path {
        &self.name
    }

    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn read_stats(&mut self) -> Result<(), CaptureError> {
        let drops = self.receiver.kernel_drops().map_err(|e| self.error(e))?;
        self.shared.kernel_drops.store(drops, Ordering::Relaxed);
        self.stats_at = Instant::now();
        Ok(())
    }

    fn error(&self, error: io::Error) -> CaptureError {
        CaptureError::Io {
            path: self.name.clone(),
            error,
        }
    }

    fn end(&mut self) -> Option<Result<(), CaptureError>> {
        self.state = State::Done;
        self.read_stats().err().map(Err)
    }
}

impl FrameSource for LiveSource {
    fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        loop {
            if self.state == State::Done {
                return None;
            }
            if self.count.is_some_and(|c| self.number >= c) {
                return self.end();
            }
            if let Some(&f) = self.batch.frames.get(self.pos) {
                self.pos += 1;
                self.number += 1;
                self.first_time_ns.get_or_insert(f.time_ns);
                self.cur = Some(f);
                self.shared.captured.store(self.number, Ordering::Relaxed);
                return Some(Ok(()));
            }
            let now = Instant::now();
            if self.state == State::Running
                && (self.stopped() || self.deadline.is_some_and(|d| now >= d))
            {
                self.state = State::Draining(now);
            }
            if let State::Draining(since) = self.state
                && now.duration_since(since) >= DRAIN_QUIET
            {
                return self.end();
            }
            let wait = match (self.state, self.deadline) {
                (State::Running, Some(d)) => POLL.min(d.saturating_duration_since(now)),
                (State::Running, None) => POLL,
                _ => Duration::from_millis(u64::from(BLOCK_TIMEOUT_MS)),
            };
            self.batch.clear();
            self.pos = 0;
            if let Err(e) = self.receiver.receive(&mut self.batch, wait) {
                self.state = State::Done;
                return Some(Err(self.error(e)));
            }
            if self.batch.len() > 0
                && let State::Draining(_) = self.state
            {
                self.state = State::Draining(Instant::now());
            }
            if self.stats_at.elapsed() >= STATS_EVERY
                && let Err(e) = self.read_stats()
            {
                self.state = State::Done;
                return Some(Err(e));
            }
        }
    }

    fn current(&self) -> Frame<'_> {
        let f = self.cur.unwrap_or(RxFrame {
            time_ns: 0,
            orig_len: 0,
            start: 0,
            end: 0,
        });
        let data = self.batch.data.get(f.start..f.end).unwrap_or_default();
        Frame {
            number: self.number,
            time_ns: f.time_ns,
            caplen: u32::try_from(data.len()).unwrap_or(u32::MAX),
            orig_len: f
                .orig_len
                .max(u32::try_from(data.len()).unwrap_or(u32::MAX)),
            link: self.link,
            input: 0,
            data,
        }
    }

    fn size_hint(&self) -> Option<u64> {
        None
    }

    fn first_time_ns(&self) -> Option<u64> {
        self.first_time_ns
    }

    fn ready(&self) -> bool {
        self.pos < self.batch.len()
    }
}

/// A one-line reason for a failure to open `iface`, from the OS error.
#[cfg(feature = "live")]
fn open_error(iface: &str, what: &str, e: &io::Error) -> anyhow::Error {
    match e.raw_os_error() {
        Some(1 | 13) => anyhow::anyhow!(
            "{iface}: capturing needs root or the CAP_NET_RAW capability ({what}: {e})"
        ),
        Some(19) => anyhow::anyhow!("{}", no_such_interface(iface)),
        Some(100) => anyhow::anyhow!("{iface}: the interface is down ({what}: {e})"),
        _ => anyhow::anyhow!("{iface}: {what}: {e}"),
    }
}

/// SIGINT and SIGTERM end the capture cleanly (what the kernel holds is still read, the outputs
/// are finished); a second one ends the process at once, as tcpdump does.
///
/// # Errors
/// The handlers cannot be installed.
pub fn stop_on_signals(handle: &LiveHandle) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let flag = handle.stop_flag();
    for sig in [SIGINT, SIGTERM] {
        // checked before the flag is set: exits on the second signal only
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&flag))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&flag)))
            .map_err(|e| anyhow::anyhow!("installing the signal handlers: {e}"))?;
    }
    Ok(())
}

/// "N frames captured, M dropped by the kernel": what every live command prints at the end.
#[must_use]
pub fn summary(handle: &LiveHandle) -> String {
    format!(
        "{} frames captured, {} dropped by the kernel",
        handle.captured(),
        handle.kernel_drops()
    )
}

/// The line a capture prints on stderr once it is receiving (as tcpdump's "listening on"):
/// scripts and tests wait for it before they start traffic.
#[must_use]
pub fn listening_line(cfg: &LiveConfig, source: &LiveSource) -> String {
    format!(
        "capturing on {} (link type {}, snaplen {}, {})",
        cfg.iface,
        source.link().0,
        cfg.snaplen,
        if cfg.all {
            "every frame"
        } else {
            "RoCE, RoCEv1, PFC/PAUSE, tcp_bth and tunnel frames"
        }
    )
}
