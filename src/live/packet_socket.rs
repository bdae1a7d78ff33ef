//! The Linux packet socket: `AF_PACKET` with a memory-mapped TPACKET_V3 ring (the `netring`
//! crate), the kernel filter attached before the socket is bound, so that nothing unfiltered
//! reaches the ring.
//!
//! The kernel takes a VLAN tag off a frame before a packet socket sees it and reports it beside
//! the frame; it is put back here (as libpcap does), so a capture holds the frame as it was on
//! the wire.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{
    BLOCK_TIMEOUT_MS, LiveConfig, Receiver, RxBatch, filter, no_such_interface, open_error,
};
use crate::frame::LinkType;

/// The ring is made of blocks of 4 MiB (`--buffer` of them, at least 2).
const BLOCK_SIZE: usize = 4 << 20;
const MIN_BLOCKS: usize = 2;
/// Blocks taken in one `receive`, at most (the rest wait for the next call).
const BLOCKS_PER_RECEIVE: usize = 8;
/// `ARPHRD_ETHER` and `ARPHRD_LOOPBACK` (whose frames carry an Ethernet header too).
const ARPHRD_ETHER: u32 = 1;
const ARPHRD_LOOPBACK: u32 = 772;

pub(super) struct PacketSocket {
    cap: netring::Capture,
    snaplen: u32,
    /// `/sys/class/net/IFACE`.
    sys: PathBuf,
}

impl PacketSocket {
    pub(super) fn open(cfg: &LiveConfig, program: &[filter::Insn]) -> anyhow::Result<Self> {
        let iface = cfg.iface.as_str();
        let sys = Path::new("/sys/class/net").join(iface);
        if iface.contains('/') || !sys.exists() {
            anyhow::bail!("{}", no_such_interface(iface));
        }
        let kind = std::fs::read_to_string(sys.join("type"))
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        if !matches!(kind, Some(ARPHRD_ETHER | ARPHRD_LOOPBACK)) {
            anyhow::bail!(
                "{iface}: not an Ethernet interface (ARPHRD type {}); live capture reads Ethernet interfaces and, through libpcap, RDMA devices",
                kind.map_or_else(|| "unknown".to_owned(), |k| k.to_string())
            );
        }
        let insns: Vec<netring::config::BpfInsn> = program
            .iter()
            .map(|i| netring::config::BpfInsn {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        let bpf = netring::BpfFilter::new(insns)
            .map_err(|e| anyhow::anyhow!("{iface}: the kernel filter: {e}"))?;
        let cap = netring::Capture::builder()
            .interface(iface)
            .block_size(BLOCK_SIZE)
            .block_count(
                usize::try_from(cfg.buffer / BLOCK_SIZE as u64)
                    .unwrap_or(usize::MAX)
                    .max(MIN_BLOCKS),
            )
            .block_timeout_ms(BLOCK_TIMEOUT_MS)
            .fill_rxhash(false)
            .promiscuous(true)
            .bpf_filter(bpf)
            .build()
            .map_err(|e| netring_error(iface, e))?;
        Ok(PacketSocket {
            cap,
            snaplen: cfg.snaplen,
            sys,
        })
    }

    /// An error when the interface no longer exists or is down.
    fn check_interface(&self) -> io::Result<()> {
        let flags = std::fs::read_to_string(self.sys.join("flags"))
            .map_err(|_| io::Error::new(io::ErrorKind::NotFound, "the interface went away"))?;
        let flags = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16).unwrap_or(1);
        if flags & IFF_UP == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NetworkDown,
                "the interface went down",
            ));
        }
        Ok(())
    }
}

/// `IFF_UP` in `/sys/class/net/IFACE/flags`.
const IFF_UP: u32 = 1;

fn netring_error(iface: &str, e: netring::Error) -> anyhow::Error {
    match e {
        netring::Error::InterfaceNotFound(_) => anyhow::anyhow!("{}", no_such_interface(iface)),
        netring::Error::PermissionDenied => {
            anyhow::anyhow!("{iface}: capturing needs root or the CAP_NET_RAW capability")
        }
        netring::Error::Socket(io) => open_error(iface, "opening a packet socket", &io),
        netring::Error::Bind(io) => open_error(iface, "binding the packet socket", &io),
        netring::Error::Mmap(io) => open_error(iface, "mapping the capture ring", &io),
        netring::Error::SockOpt { option, source } => open_error(iface, option, &source),
        other => anyhow::anyhow!("{iface}: {other}"),
    }
}

fn to_io(e: netring::Error) -> io::Error {
    match e {
        netring::Error::Io(io) => io,
        other => io::Error::other(other.to_string()),
    }
}

/// Copies a ring block's frames into `batch`, each cut to `snaplen` bytes.
fn take(snaplen: u32, batch: &mut RxBatch, block: &netring::PacketBatch<'_>) {
    {
        for pkt in block {
            let ts = pkt.timestamp();
            let time_ns = u64::from(ts.sec) * 1_000_000_000 + u64::from(ts.nsec);
            let data = pkt.data();
            let orig = u32::try_from(pkt.original_len()).unwrap_or(u32::MAX);
            let status = pkt.status();
            let tagged = (status.vlan_valid || pkt.vlan_tci() != 0) && data.len() >= 12;
            match (tagged, data.split_at_checked(12)) {
                (true, Some((macs, rest))) => {
                    let tpid = if status.vlan_tpid_valid && pkt.vlan_tpid() != 0 {
                        pkt.vlan_tpid()
                    } else {
                        0x8100
                    };
                    let mut tag = [0u8; 4];
                    tag[..2].copy_from_slice(&tpid.to_be_bytes());
                    tag[2..].copy_from_slice(&pkt.vlan_tci().to_be_bytes());
                    // the tag goes in, the snapshot length still holds
                    let room = (snaplen as usize).saturating_sub(16);
                    let rest = rest.get(..rest.len().min(room)).unwrap_or(rest);
                    let tag = tag.get(..(snaplen as usize).saturating_sub(12).min(4));
                    batch.push(
                        time_ns,
                        orig.saturating_add(4),
                        &[macs, tag.unwrap_or_default(), rest],
                    );
                }
                _ => batch.push(time_ns, orig, &[data]),
            }
        }
    }
}

impl Receiver for PacketSocket {
    fn receive(&mut self, batch: &mut RxBatch, timeout: Duration) -> io::Result<()> {
        let start = Instant::now();
        let Some(first) = self.cap.next_batch_blocking(timeout).map_err(to_io)? else {
            // back early with nothing: the socket has an error to report (the interface
            // went away or down); say so instead of polling it in a loop
            if start.elapsed() < timeout / 2 {
                self.check_interface()?;
                std::thread::sleep(timeout.saturating_sub(start.elapsed()));
            }
            return Ok(());
        };
        take(self.snaplen, batch, &first);
        drop(first);
        for _ in 1..BLOCKS_PER_RECEIVE {
            let Some(block) = self.cap.next_batch() else {
                break;
            };
            take(self.snaplen, batch, &block);
        }
        Ok(())
    }

    fn kernel_drops(&mut self) -> io::Result<u64> {
        let stats = self.cap.cumulative_stats().map_err(to_io)?;
        Ok(u64::from(stats.drops))
    }

    fn link(&self) -> LinkType {
        LinkType::ETHERNET
    }
}
