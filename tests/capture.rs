//! Capture input and output: pcap/pcapng readers, the merge, the sinks, and every kind of bad input.
//!
//! tshark, capinfos and mergecap serve as oracles where they are installed; those tests print a
//! notice and pass when they are not.

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocescope::capture::{
    CaptureError, CaptureFormat, CaptureReader, LinkType, MergedReader, cooked_payload, open_all,
    sll_payload, sll2_payload,
};
use rocescope::sink::{FrameSink, MemorySink, PcapNgWriter, PcapWriter, writer_for_path};

// ---------------------------------------------------------------------------------------------
// helpers

/// An owned copy of a frame, for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    number: u64,
    time_ns: u64,
    caplen: u32,
    orig_len: u32,
    link: LinkType,
    data: Vec<u8>,
}

/// Reads every frame; returns the frames and the error that ended the reading, if any.
fn read_all(mut reader: CaptureReader) -> (Vec<Owned>, Option<CaptureError>) {
    let mut frames = Vec::new();
    while let Some(item) = reader.next_frame() {
        match item {
            Ok(f) => {
                assert_eq!(f.caplen as usize, f.data.len());
                frames.push(Owned {
                    number: f.number,
                    time_ns: f.time_ns,
                    caplen: f.caplen,
                    orig_len: f.orig_len,
                    link: f.link,
                    data: f.data.to_vec(),
                });
            }
            Err(e) => {
                assert!(
                    reader.next_frame().is_none(),
                    "a reader is finished after an error"
                );
                return (frames, Some(e));
            }
        }
    }
    (frames, None)
}

fn read_merged(mut reader: MergedReader) -> (Vec<(usize, Owned)>, Vec<CaptureError>) {
    let mut frames = Vec::new();
    let mut errors = Vec::new();
    while let Some(item) = reader.next_frame() {
        match item {
            Ok(f) => {
                let owned = Owned {
                    number: f.number,
                    time_ns: f.time_ns,
                    caplen: f.caplen,
                    orig_len: f.orig_len,
                    link: f.link,
                    data: f.data.to_vec(),
                };
                frames.push((reader.last_source().unwrap_or(usize::MAX), owned));
            }
            Err(e) => errors.push(e),
        }
    }
    (frames, errors)
}

fn reader_from(name: &str, bytes: Vec<u8>) -> Result<CaptureReader, CaptureError> {
    CaptureReader::from_reader(name, Cursor::new(bytes))
}

fn assert_one_line(e: &CaptureError) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "error message is one line: {text:?}");
    assert!(!text.contains("os error"), "no os error suffix: {text:?}");
    text
}

/// A reader that hands out at most `chunk` bytes per call, like a pipe.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Hand-built classic pcap.
fn pcap_bytes(big: bool, nanos: bool, link: u32, records: &[(u32, u32, &[u8], u32)]) -> Vec<u8> {
    let u32b = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u16b = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut out = Vec::new();
    out.extend(u32b(if nanos { 0xA1B2_3C4D } else { 0xA1B2_C3D4 }));
    out.extend(u16b(2));
    out.extend(u16b(4));
    out.extend(u32b(0));
    out.extend(u32b(0));
    out.extend(u32b(65535));
    out.extend(u32b(link));
    for &(sec, frac, data, orig) in records {
        out.extend(u32b(sec));
        out.extend(u32b(frac));
        out.extend(u32b(u32::try_from(data.len()).unwrap()));
        out.extend(u32b(orig));
        out.extend_from_slice(data);
    }
    out
}

/// Hand-built pcapng, in either byte order.
struct Ng {
    big: bool,
    out: Vec<u8>,
}

impl Ng {
    fn new(big: bool) -> Self {
        let mut ng = Ng {
            big,
            out: Vec::new(),
        };
        ng.shb();
        ng
    }
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn block(&mut self, block_type: u32, mut body: Vec<u8>) -> &mut Self {
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let total = u32::try_from(body.len() + 12).unwrap();
        let (t, l) = (self.u32(block_type), self.u32(total));
        self.out.extend(t);
        self.out.extend(l);
        self.out.extend(body);
        self.out.extend(l);
        self
    }
    fn shb(&mut self) -> &mut Self {
        let mut body = Vec::new();
        body.extend(self.u32(0x1A2B_3C4D));
        body.extend(self.u16(1));
        body.extend(self.u16(0));
        body.extend([0xFF; 8]);
        self.block(0x0A0D_0D0A, body)
    }
    fn idb(&mut self, link: u16, snaplen: u32, tsresol: Option<u8>) -> &mut Self {
        let mut body = Vec::new();
        body.extend(self.u16(link));
        body.extend(self.u16(0));
        body.extend(self.u32(snaplen));
        if let Some(r) = tsresol {
            body.extend(self.u16(9));
            body.extend(self.u16(1));
            body.extend([r, 0, 0, 0]);
            body.extend(self.u16(0));
            body.extend(self.u16(0));
        }
        self.block(1, body)
    }
    fn epb(&mut self, iface: u32, ticks: u64, data: &[u8], orig: u32) -> &mut Self {
        let mut body = Vec::new();
        body.extend(self.u32(iface));
        body.extend(self.u32(u32::try_from(ticks >> 32).unwrap()));
        body.extend(self.u32(u32::try_from(ticks & 0xFFFF_FFFF).unwrap()));
        body.extend(self.u32(u32::try_from(data.len()).unwrap()));
        body.extend(self.u32(orig));
        body.extend_from_slice(data);
        while body.len() % 4 != 0 {
            body.push(0);
        }
        // an epb_flags option, as dumpcap writes
        body.extend(self.u16(2));
        body.extend(self.u16(4));
        body.extend(self.u32(1));
        body.extend(self.u16(0));
        body.extend(self.u16(0));
        self.block(6, body)
    }
    fn spb(&mut self, data: &[u8], orig: u32) -> &mut Self {
        let mut body = Vec::new();
        body.extend(self.u32(orig));
        body.extend_from_slice(data);
        self.block(3, body)
    }
    fn bytes(&self) -> Vec<u8> {
        self.out.clone()
    }
}

fn frame_bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add(u8::try_from(i % 251).unwrap()))
        .collect()
}

fn have_tool(name: &str) -> bool {
    let found = Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        println!("notice: {name} not installed, oracle check skipped");
    }
    found
}

/// `(time_ns, len, caplen)` of every frame, as tshark reads it.
fn tshark_frames(path: &Path) -> Vec<(u64, u32, u32)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
            "-e",
            "frame.len",
            "-e",
            "frame.cap_len",
        ])
        .stderr(Stdio::null())
        .output()
        .expect("tshark runs");
    assert!(out.status.success(), "tshark failed on {}", path.display());
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| {
            let mut cols = line.split('\t');
            let time = cols.next().expect("time");
            let (sec, frac) = time.split_once('.').unwrap_or((time, "0"));
            let frac = format!("{frac:0<9}");
            let ns = sec.parse::<u64>().expect("sec") * 1_000_000_000
                + frac[..9].parse::<u64>().expect("frac");
            let len = cols.next().expect("len").parse().expect("len");
            let cap = cols.next().expect("caplen").parse().expect("caplen");
            (ns, len, cap)
        })
        .collect()
}

fn ours(path: &Path) -> Vec<(u64, u32, u32)> {
    let (frames, err) = read_all(CaptureReader::open(path).expect("opens"));
    assert!(err.is_none(), "{err:?}");
    frames
        .iter()
        .map(|f| (f.time_ns, f.orig_len, f.caplen))
        .collect()
}

const T0: u64 = 1_700_000_000_000_000_000;

// ---------------------------------------------------------------------------------------------
// round trips

#[test]
fn pcap_writer_round_trip_nanosecond() {
    let mut w = PcapWriter::with_config(Vec::new(), 100, LinkType::ETHERNET).unwrap();
    let a = frame_bytes(1, 60);
    let b = frame_bytes(2, 150); // longer than the snaplen: cut to 100
    let c = frame_bytes(3, 64);
    w.send(T0 + 1, &a).unwrap();
    w.send(T0 + 999_999_999, &b).unwrap();
    w.send_truncated(T0 + 2_000_000_123, &c, 1500).unwrap();
    w.finish().unwrap();
    let bytes = w.into_inner().unwrap();

    let reader = reader_from("rt.pcap", bytes).unwrap();
    assert_eq!(
        reader.format(),
        CaptureFormat::Pcap {
            nanosecond: true,
            big_endian: false,
            link: LinkType::ETHERNET
        }
    );
    let (frames, err) = read_all(reader);
    assert!(err.is_none());
    assert_eq!(frames.len(), 3);
    assert_eq!(
        (
            frames[0].number,
            frames[0].time_ns,
            frames[0].caplen,
            frames[0].orig_len
        ),
        (1, T0 + 1, 60, 60)
    );
    assert_eq!(frames[0].data, a);
    assert_eq!(
        (
            frames[1].number,
            frames[1].time_ns,
            frames[1].caplen,
            frames[1].orig_len
        ),
        (2, T0 + 999_999_999, 100, 150)
    );
    assert_eq!(frames[1].data, b[..100]);
    assert_eq!(
        (frames[2].time_ns, frames[2].caplen, frames[2].orig_len),
        (T0 + 2_000_000_123, 64, 1500)
    );
    assert_eq!(frames[2].link, LinkType::ETHERNET);
}

#[test]
fn pcap_microsecond_hand_built_reads_as_nanoseconds() {
    let a = frame_bytes(7, 42);
    let bytes = pcap_bytes(false, false, 1, &[(1_700_000_000, 123_456, &a, 42)]);
    let reader = reader_from("us.pcap", bytes).unwrap();
    assert!(matches!(
        reader.format(),
        CaptureFormat::Pcap {
            nanosecond: false,
            ..
        }
    ));
    let (frames, err) = read_all(reader);
    assert!(err.is_none());
    assert_eq!(frames[0].time_ns, 1_700_000_000_123_456_000);
    assert_eq!(frames[0].data, a);
}

#[test]
fn pcap_big_endian_both_resolutions() {
    let a = frame_bytes(9, 70);
    for nanos in [false, true] {
        let bytes = pcap_bytes(true, nanos, 1, &[(5, 7, &a, 1000), (6, 8, &a[..10], 10)]);
        let reader = reader_from("be.pcap", bytes).unwrap();
        assert!(matches!(
            reader.format(),
            CaptureFormat::Pcap {
                big_endian: true,
                ..
            }
        ));
        let (frames, err) = read_all(reader);
        assert!(err.is_none());
        let unit = if nanos { 1 } else { 1000 };
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].time_ns, 5_000_000_000 + 7 * unit);
        assert_eq!((frames[0].caplen, frames[0].orig_len), (70, 1000));
        assert_eq!(frames[1].time_ns, 6_000_000_000 + 8 * unit);
        assert_eq!(frames[1].data, a[..10]);
    }
}

#[test]
fn pcapng_writer_round_trip() {
    let mut w = PcapNgWriter::with_config(Vec::new(), 64, LinkType::ETHERNET).unwrap();
    let frames_in: Vec<Vec<u8>> = (0..5u8)
        .map(|i| frame_bytes(i, 60 + usize::from(i)))
        .collect();
    for (i, f) in frames_in.iter().enumerate() {
        w.send(T0 + u64::try_from(i).unwrap() * 1_000_000_007, f)
            .unwrap();
    }
    w.send_truncated(T0 + 10_000_000_000, &frames_in[0][..20], 9000)
        .unwrap();
    w.finish().unwrap();
    let reader = reader_from("rt.pcapng", w.into_inner().unwrap()).unwrap();
    assert_eq!(reader.format(), CaptureFormat::PcapNg);
    let (frames, err) = read_all(reader);
    assert!(err.is_none());
    assert_eq!(frames.len(), 6);
    for (i, f) in frames.iter().take(5).enumerate() {
        let want = &frames_in[i];
        assert_eq!(f.number, u64::try_from(i).unwrap() + 1);
        assert_eq!(f.time_ns, T0 + u64::try_from(i).unwrap() * 1_000_000_007);
        assert_eq!(f.orig_len as usize, want.len());
        assert_eq!(f.data, want[..want.len().min(64)]);
        assert_eq!(f.link, LinkType::ETHERNET);
    }
    assert_eq!((frames[5].caplen, frames[5].orig_len), (20, 9000));
}

#[test]
fn pcapng_two_interfaces_with_own_resolution_and_link_type() {
    for big in [false, true] {
        let eth = frame_bytes(1, 60);
        let sll2 = frame_bytes(2, 61);
        let bytes = Ng::new(big)
            .idb(1, 0, None) // Ethernet, default resolution: microseconds
            .idb(276, 0, Some(9)) // SLL2, nanoseconds
            .idb(113, 0, Some(0x8A)) // SLL, 2^-10 s
            .epb(0, 1_700_000_000_000_001, &eth, 60)
            .epb(1, 1_700_000_000_000_000_002, &sll2, 61)
            .epb(2, 3 * 1024 + 512, &eth[..13], 60)
            .block(4, vec![0, 0, 0, 0]) // name resolution block: skipped
            .spb(&sll2, 61)
            .bytes();
        let (frames, err) = read_all(reader_from("two.pcapng", bytes).unwrap());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(frames.len(), 4);
        assert_eq!(frames[0].time_ns, 1_700_000_000_000_001_000);
        assert_eq!(frames[0].link, LinkType::ETHERNET);
        assert_eq!(frames[0].data, eth);
        assert_eq!(frames[1].time_ns, 1_700_000_000_000_000_002);
        assert_eq!(frames[1].link, LinkType::LINUX_SLL2);
        assert_eq!(frames[1].data, sll2);
        assert_eq!(frames[2].time_ns, 3_500_000_000);
        assert_eq!(frames[2].link, LinkType::LINUX_SLL);
        assert_eq!((frames[2].caplen, frames[2].orig_len), (13, 60));
        // the SPB: interface 0, no padding in the data, the previous frame's time
        assert_eq!(frames[3].link, LinkType::ETHERNET);
        assert_eq!(frames[3].data, sll2);
        assert_eq!(frames[3].time_ns, 3_500_000_000);
        assert_eq!(
            frames.iter().map(|f| f.number).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }
}

#[test]
fn pcapng_unknown_block_is_skipped() {
    let a = frame_bytes(3, 60);
    let bytes = Ng::new(false)
        .idb(1, 0, Some(9))
        .block(0x0BAD_F00D, vec![1, 2, 3, 4, 5, 6, 7, 8])
        .epb(0, 5, &a, 60)
        .block(0x0000_0BAD, Vec::new())
        .epb(0, 6, &a, 60)
        .bytes();
    let (frames, err) = read_all(reader_from("unknown.pcapng", bytes).unwrap());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(frames.len(), 2);
    assert_eq!((frames[0].time_ns, frames[1].time_ns), (5, 6));
}

#[test]
fn pcapng_second_section_resets_interfaces_and_byte_order() {
    let a = frame_bytes(5, 60);
    let mut first = Ng::new(false);
    first.idb(1, 0, Some(9)).epb(0, 100, &a, 60);
    let mut second = Ng::new(true);
    second.idb(113, 0, Some(9)).epb(0, 200, &a, 60);
    let mut bytes = first.bytes();
    bytes.extend(second.bytes());
    let (frames, err) = read_all(reader_from("sections.pcapng", bytes).unwrap());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].link, LinkType::LINUX_SLL);
    assert_eq!(frames[1].time_ns, 200);
}

#[test]
fn stream_in_small_chunks_reads_like_a_file() {
    // 3000 frames of up to 1500 bytes: several refills of the 1 MiB buffer, delivered 7 bytes at
    // a time as a slow pipe would.
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for i in 0..3000u64 {
        let len = 60 + usize::try_from(i % 1441).unwrap();
        w.send(T0 + i, &frame_bytes(u8::try_from(i % 256).unwrap(), len))
            .unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let whole = read_all(reader_from("whole", bytes.clone()).unwrap()).0;
    let trickle = Trickle {
        data: bytes,
        pos: 0,
        chunk: 7,
    };
    let streamed = read_all(CaptureReader::from_reader("<stdin>", trickle).unwrap()).0;
    assert_eq!(whole.len(), 3000);
    assert_eq!(whole, streamed);
}

#[test]
fn stdin_dash_reads_standard_input() {
    if std::env::var_os("ROCESCOPE_TEST_STDIN_CHILD").is_some() {
        let reader = CaptureReader::open(Path::new("-")).expect("stdin opens");
        assert_eq!(reader.path(), Path::new("<stdin>"));
        let (frames, err) = read_all(reader);
        assert!(err.is_none());
        println!("stdin-frames={}", frames.len());
        return;
    }
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for i in 0..3 {
        w.send(T0 + i, &frame_bytes(1, 60)).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stdin_dash_reads_standard_input", "--nocapture"])
        .env("ROCESCOPE_TEST_STDIN_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("stdin-frames=3"));
}

// ---------------------------------------------------------------------------------------------
// link types

#[test]
fn sll_and_sll2_helpers_find_ethertype_and_payload() {
    let mut sll = vec![
        0x00, 0x00, // packet type: to us
        0x00, 0x01, // ARPHRD_ETHER
        0x00, 0x06, // address length
        0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, // address
        0x08, 0x00, // protocol: IPv4
    ];
    sll.extend([0x45, 0x00, 0x00, 0x14]);
    assert_eq!(sll_payload(&sll), Some((0x0800, &[0x45, 0, 0, 0x14][..])));
    assert_eq!(cooked_payload(LinkType::LINUX_SLL, &sll), sll_payload(&sll));
    assert_eq!(sll_payload(&sll[..15]), None);
    assert_eq!(sll_payload(&sll[..16]), Some((0x0800, &[][..])));

    let mut sll2 = vec![
        0x86, 0xDD, // protocol: IPv6
        0x00, 0x00, // reserved
        0x00, 0x00, 0x00, 0x03, // interface index
        0x00, 0x01, // ARPHRD_ETHER
        0x04, // packet type: outgoing
        0x06, // address length
        0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, // address
    ];
    sll2.extend([0x60, 0x00]);
    assert_eq!(sll2_payload(&sll2), Some((0x86DD, &[0x60, 0x00][..])));
    assert_eq!(
        cooked_payload(LinkType::LINUX_SLL2, &sll2),
        sll2_payload(&sll2)
    );
    assert_eq!(sll2_payload(&sll2[..19]), None);
    assert_eq!(cooked_payload(LinkType::ETHERNET, &sll2), None);
}

#[test]
fn unsupported_link_type_is_reported_per_frame() {
    let a = frame_bytes(1, 30);
    let bytes = pcap_bytes(false, true, 147, &[(1, 0, &a, 30), (2, 0, &a, 30)]);
    let (frames, err) = read_all(reader_from("user0.pcap", bytes).unwrap());
    assert!(err.is_none());
    assert_eq!(frames.len(), 2);
    assert!(frames.iter().all(|f| f.link == LinkType(147)));
    assert!(!frames[0].link.is_supported());
    assert_eq!(frames[0].link.to_string(), "LINKTYPE(147)");
    assert_eq!(LinkType::LINUX_SLL2.to_string(), "LINUX_SLL2");
}

// ---------------------------------------------------------------------------------------------
// merge

fn pcap_with_times(times: &[u64], seed: u8) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for (i, &t) in times.iter().enumerate() {
        let tag = seed.wrapping_add(u8::try_from(i).unwrap());
        w.send(t, &frame_bytes(tag, 60)).unwrap();
    }
    w.into_inner().unwrap()
}

#[test]
fn single_file_keeps_file_order_when_time_goes_backwards() {
    let bytes = pcap_with_times(&[10, 30, 20, 40], 0);
    let (frames, _) = read_all(reader_from("a", bytes.clone()).unwrap());
    let got: Vec<_> = frames.iter().map(|f| (f.number, f.time_ns)).collect();
    assert_eq!(got, [(1, 10), (2, 30), (3, 20), (4, 40)]);
    let merged = MergedReader::new(vec![reader_from("a", bytes).unwrap()]);
    let (mframes, errors) = read_merged(merged);
    assert!(errors.is_empty());
    assert_eq!(
        mframes
            .iter()
            .map(|(_, f)| (f.number, f.time_ns))
            .collect::<Vec<_>>(),
        got
    );
}

#[test]
fn merge_orders_by_time_with_ties_to_the_first_file() {
    let a = pcap_with_times(&[10, 30, 20, 40], 0);
    let b = pcap_with_times(&[10, 25, 30], 100);
    let merged = MergedReader::new(vec![
        reader_from("a", a.clone()).unwrap(),
        reader_from("b", b.clone()).unwrap(),
    ]);
    let (frames, errors) = read_merged(merged);
    assert!(errors.is_empty());
    let got: Vec<_> = frames
        .iter()
        .map(|(src, f)| (f.number, *src, f.time_ns))
        .collect();
    assert_eq!(
        got,
        [
            (1, 0, 10),
            (2, 1, 10),
            (3, 1, 25),
            (4, 0, 30),
            (5, 0, 20),
            (6, 1, 30),
            (7, 0, 40)
        ]
    );
}

/// mergecap as the oracle, on inputs without ties across files: mergecap 4.0 gives a tie to the
/// later file, while the spec (§2) gives it to the file named first.
#[test]
fn merge_matches_mergecap_when_times_go_backwards() {
    if !have_tool("mergecap") {
        return;
    }
    let a = pcap_with_times(&[10, 31, 20, 40], 0);
    let b = pcap_with_times(&[11, 25, 30], 100);
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb, pm) = (
        dir.path().join("a.pcap"),
        dir.path().join("b.pcap"),
        dir.path().join("m.pcapng"),
    );
    std::fs::write(&pa, &a).unwrap();
    std::fs::write(&pb, &b).unwrap();
    let status = Command::new("mergecap")
        .arg("-F")
        .arg("pcapng")
        .arg("-w")
        .arg(&pm)
        .arg(&pa)
        .arg(&pb)
        .status()
        .unwrap();
    assert!(status.success());
    let (theirs, _) = read_all(CaptureReader::open(&pm).unwrap());
    let (ours_merged, errors) = read_merged(open_all(&[pa, pb]).unwrap());
    assert!(errors.is_empty());
    let strip = |f: &Owned| (f.number, f.time_ns, f.data.clone());
    assert_eq!(
        ours_merged
            .iter()
            .map(|(_, f)| f.time_ns)
            .collect::<Vec<_>>(),
        [10, 11, 25, 30, 31, 20, 40]
    );
    assert_eq!(
        theirs.iter().map(strip).collect::<Vec<_>>(),
        ours_merged
            .iter()
            .map(|(_, f)| strip(f))
            .collect::<Vec<_>>()
    );
}

#[test]
fn merge_reports_a_broken_input_and_goes_on_with_the_others() {
    let a = pcap_with_times(&[1, 2, 3], 0);
    let mut b = pcap_with_times(&[4, 5], 50);
    b.truncate(b.len() - 10);
    let merged = MergedReader::new(vec![
        reader_from("a.pcap", a).unwrap(),
        reader_from("b.pcap", b).unwrap(),
    ]);
    let (frames, errors) = read_merged(merged);
    assert_eq!(frames.len(), 4);
    assert_eq!(errors.len(), 1);
    assert!(assert_one_line(&errors[0]).starts_with("b.pcap: truncated record"));
}

#[test]
fn open_all_with_no_paths_yields_nothing() {
    let mut merged = open_all(&[]).unwrap();
    assert!(merged.next_frame().is_none());
}

// ---------------------------------------------------------------------------------------------
// bad input: one-line errors, never a panic

#[test]
fn empty_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.pcap");
    std::fs::write(&p, b"").unwrap();
    let e = CaptureReader::open(&p).unwrap_err();
    assert!(matches!(e, CaptureError::Empty { .. }));
    assert_eq!(assert_one_line(&e), format!("{}: empty file", p.display()));
}

#[test]
fn random_bytes_are_not_a_capture() {
    let e = reader_from("captures/x.bin", b"\x7fELF\x02\x01\x01\x00rest".to_vec()).unwrap_err();
    assert_eq!(
        assert_one_line(&e),
        "captures/x.bin: not a pcap or pcapng file (magic 0x7f454c46)"
    );
    let e = reader_from("short.bin", vec![0xd4, 0xc3]).unwrap_err();
    assert_eq!(
        assert_one_line(&e),
        "short.bin: not a pcap or pcapng file (only 2 bytes)"
    );
}

#[test]
fn truncated_pcap_header_is_an_error() {
    let mut bytes = pcap_bytes(false, true, 1, &[]);
    bytes.truncate(10);
    let e = reader_from("hdr.pcap", bytes).unwrap_err();
    assert_eq!(
        assert_one_line(&e),
        "hdr.pcap: truncated pcap header (24 bytes needed, 10 present)"
    );
    let mut ng = Ng::new(false).bytes();
    ng.truncate(20);
    let e = reader_from("hdr.pcapng", ng).unwrap_err();
    assert!(assert_one_line(&e).starts_with("hdr.pcapng: truncated pcapng section header"));
}

#[test]
fn record_past_end_of_file_ends_cleanly_after_the_good_frames() {
    let a = frame_bytes(1, 60);
    let mut bytes = pcap_bytes(false, true, 1, &[(1, 0, &a, 60), (2, 0, &a, 60)]);
    // a third record header that says 1514 bytes, followed by only 20
    bytes.extend(3u32.to_le_bytes());
    bytes.extend(0u32.to_le_bytes());
    bytes.extend(1514u32.to_le_bytes());
    bytes.extend(1514u32.to_le_bytes());
    bytes.extend([0u8; 20]);
    let (frames, err) = read_all(reader_from("x.pcap", bytes).unwrap());
    assert_eq!(frames.len(), 2);
    let offset = 24 + 2 * (16 + 60);
    assert_eq!(
        assert_one_line(&err.unwrap()),
        format!("x.pcap: truncated record at byte {offset} (record says 1514 bytes, 20 left)")
    );
}

#[test]
fn record_header_cut_short_ends_cleanly() {
    let a = frame_bytes(1, 60);
    let mut bytes = pcap_bytes(false, true, 1, &[(1, 0, &a, 60)]);
    bytes.extend([1, 2, 3, 4, 5]);
    let (frames, err) = read_all(reader_from("y.pcap", bytes).unwrap());
    assert_eq!(frames.len(), 1);
    assert_eq!(
        assert_one_line(&err.unwrap()),
        "y.pcap: truncated record header at byte 100 (need 16 bytes, 5 left)"
    );
}

#[test]
fn pcapng_block_past_end_of_file_ends_cleanly() {
    let a = frame_bytes(1, 60);
    let mut bytes = Ng::new(false)
        .idb(1, 0, None)
        .epb(0, 1, &a, 60)
        .epb(0, 2, &a, 60)
        .bytes();
    bytes.truncate(bytes.len() - 30);
    let (frames, err) = read_all(reader_from("z.pcapng", bytes).unwrap());
    assert_eq!(frames.len(), 1);
    let text = assert_one_line(&err.unwrap());
    assert!(
        text.starts_with("z.pcapng: truncated block at byte ") && text.contains("left)"),
        "{text}"
    );
}

#[test]
fn pcapng_packet_on_undescribed_interface_is_an_error() {
    let a = frame_bytes(1, 60);
    let bytes = Ng::new(false).idb(1, 0, None).epb(3, 1, &a, 60).bytes();
    let (frames, err) = read_all(reader_from("if.pcapng", bytes).unwrap());
    assert!(frames.is_empty());
    let text = assert_one_line(&err.unwrap());
    assert!(text.contains("refers to interface 3"), "{text}");
}

#[test]
fn directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = CaptureReader::open(dir.path()).unwrap_err();
    assert!(matches!(e, CaptureError::IsDirectory { .. }));
    assert_eq!(
        assert_one_line(&e),
        format!("{}: is a directory", dir.path().display())
    );
}

#[test]
fn missing_file_is_an_error() {
    let e = CaptureReader::open(Path::new("nope.pcap")).unwrap_err();
    assert_eq!(assert_one_line(&e), "nope.pcap: No such file or directory");
    assert_eq!(e.path(), Path::new("nope.pcap"));
    let e = open_all(&[PathBuf::from("nope.pcap")]).unwrap_err();
    assert_eq!(e.to_string(), "nope.pcap: No such file or directory");
}

/// A tiny deterministic generator (xorshift), so the garbage tests need no extra crate.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }
}

fn read_everything(name: &str, bytes: Vec<u8>) {
    if let Ok(reader) = reader_from(name, bytes)
        && let Some(e) = read_all(reader).1
    {
        assert_one_line(&e);
    }
}

#[test]
fn any_cut_or_corruption_gives_errors_not_panics() {
    let a = frame_bytes(1, 61);
    let pcap = pcap_bytes(true, false, 1, &[(1, 2, &a, 61), (3, 4, &a[..7], 61)]);
    let ng = Ng::new(false)
        .idb(1, 0, Some(9))
        .idb(276, 100, Some(0x83))
        .epb(1, 5, &a, 61)
        .spb(&a, 61)
        .block(0x1234_5678, vec![9; 12])
        .epb(0, 5, &a[..3], 61)
        .bytes();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for base in [pcap, ng] {
        for cut in 0..base.len() {
            read_everything("cut", base[..cut].to_vec());
        }
        for _ in 0..3000 {
            let mut bytes = base.clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(bytes.len());
                bytes[at] = u8::try_from(rng.next() & 0xFF).unwrap();
            }
            read_everything("flip", bytes);
        }
    }
    for _ in 0..500 {
        let len = rng.below(200);
        let mut bytes: Vec<u8> = (0..len)
            .map(|_| u8::try_from(rng.next() & 0xFF).unwrap())
            .collect();
        // give half of them a valid magic so the record parsers see garbage too
        if len >= 4 && rng.below(2) == 0 {
            bytes[..4].copy_from_slice(&0xA1B2_C3D4u32.to_be_bytes());
        }
        read_everything("random", bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// sinks

#[test]
fn memory_sink_keeps_time_bytes_and_original_length() {
    let mut sink = MemorySink::new();
    sink.send(5, &[1, 2, 3]).unwrap();
    sink.send_truncated(6, &[4, 5], 100).unwrap();
    sink.finish().unwrap();
    assert!(sink.finished);
    assert_eq!(
        sink.frames,
        vec![(5, vec![1, 2, 3], 3), (6, vec![4, 5], 100)]
    );
}

#[test]
fn writer_for_path_picks_format_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    for (name, want) in [
        ("out.pcap", "pcap"),
        ("out.pcapng", "pcapng"),
        ("OUT.PCAPNG", "pcapng"),
        ("out.cap", "pcap"),
    ] {
        let p = dir.path().join(name);
        let mut w = writer_for_path(&p).unwrap();
        w.send(T0, &frame_bytes(0, 60)).unwrap();
        w.finish().unwrap();
        drop(w);
        let reader = CaptureReader::open(&p).unwrap();
        let got = match reader.format() {
            CaptureFormat::Pcap { .. } => "pcap",
            CaptureFormat::PcapNg => "pcapng",
        };
        assert_eq!(got, want, "{name}");
        assert_eq!(read_all(reader).0.len(), 1);
    }
}

#[test]
fn written_files_read_the_same_in_tshark() {
    if !have_tool("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["w.pcap", "w.pcapng"] {
        let p = dir.path().join(name);
        let mut w = writer_for_path(&p).unwrap();
        let mut want = Vec::new();
        for i in 0..50u32 {
            let t = T0 + u64::from(i) * 1_234_567_891;
            let len = 60 + (i as usize * 37) % 1400;
            let f = frame_bytes(u8::try_from(i).unwrap(), len);
            if i % 7 == 0 {
                w.send_truncated(t, &f[..40], u32::try_from(len).unwrap())
                    .unwrap();
                want.push((t, u32::try_from(len).unwrap(), 40));
            } else {
                w.send(t, &f).unwrap();
                want.push((t, u32::try_from(len).unwrap(), u32::try_from(len).unwrap()));
            }
        }
        w.finish().unwrap();
        drop(w);
        assert_eq!(tshark_frames(&p), want, "{name}");
        assert_eq!(ours(&p), want, "{name}");
    }
}

#[test]
fn mergecap_pcapng_with_mixed_resolutions_and_link_types_reads_like_tshark() {
    if !have_tool("mergecap") || !have_tool("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let us = dir.path().join("us.pcap");
    let ns = dir.path().join("ns.pcap");
    let out = dir.path().join("mixed.pcapng");
    let a = frame_bytes(1, 80);
    std::fs::write(
        &us,
        pcap_bytes(
            false,
            false,
            113,
            &[(1_700_000_000, 5, &a, 80), (1_700_000_002, 999_999, &a, 90)],
        ),
    )
    .unwrap();
    std::fs::write(
        &ns,
        pcap_bytes(
            true,
            true,
            1,
            &[
                (1_700_000_001, 123_456_789, &a, 80),
                (1_700_000_002, 7, &a[..60], 60),
            ],
        ),
    )
    .unwrap();
    let status = Command::new("mergecap")
        .arg("-F")
        .arg("pcapng")
        .arg("-w")
        .arg(&out)
        .arg(&us)
        .arg(&ns)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(ours(&out), tshark_frames(&out));
    let (frames, _) = read_all(CaptureReader::open(&out).unwrap());
    let links: Vec<_> = frames.iter().map(|f| f.link).collect();
    assert_eq!(
        links,
        [
            LinkType::LINUX_SLL,
            LinkType::ETHERNET,
            LinkType::ETHERNET,
            LinkType::LINUX_SLL
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// real captures

fn real_captures_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures/real");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "notice: {} not found, real-capture checks skipped",
            dir.display()
        );
        None
    }
}

#[test]
fn real_captures_have_the_expected_frame_counts() {
    let Some(dir) = real_captures_dir() else {
        return;
    };
    let expected = [
        ("cm-send-write", 17),
        ("cm-write-read", 16),
        ("ib-send-bw", 45),
        ("mlx-rocev1-32qp", 2468),
        ("mlx-rocev1-v2-mixed", 624),
        ("mlx-rocev2-32qp", 708),
        ("nccl-uc-write-snaplen", 520),
        ("nvmeof-discover", 65),
        ("sniffer-dc-vendor-opcodes", 19),
        ("sniffer-rc-bad-icrc", 21),
        ("sniffer-uc-send", 17),
        ("softroce-read-request", 1),
    ];
    for (name, count) in expected {
        let path = dir.join(format!("{name}.pcap"));
        let (frames, err) = read_all(CaptureReader::open(&path).unwrap());
        assert!(err.is_none(), "{name}: {err:?}");
        assert_eq!(frames.len(), count, "{name}");
        assert!(
            frames
                .iter()
                .enumerate()
                .all(|(i, f)| f.number == u64::try_from(i).unwrap() + 1)
        );
    }
    // nccl-uc-write-snaplen.pcap records orig_len == caplen: its cut shows only in the IP total
    // length, which is the dissector's business, so the reader does not mark it truncated.
}

#[test]
fn every_real_capture_reads_like_tshark() {
    let Some(dir) = real_captures_dir() else {
        return;
    };
    if !have_tool("tshark") {
        return;
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    for p in &paths {
        assert_eq!(ours(p), tshark_frames(p), "{}", p.display());
    }
}

/// Found by the `capture_blocks` fuzz target: a section header whose comment is not UTF-8
/// made the whole file unreadable ("malformed pcapng section header: UTF8 error"). Strings in
/// options the reader does not need are skipped unread, in every block.
#[test]
fn pcapng_options_that_are_not_utf8_are_skipped() {
    let mut ng = Ng {
        big: false,
        out: Vec::new(),
    };
    let opt = |ng: &Ng, code: u16, value: &[u8]| {
        let mut o = Vec::new();
        o.extend(ng.u16(code));
        o.extend(ng.u16(u16::try_from(value.len()).unwrap()));
        o.extend_from_slice(value);
        while o.len() % 4 != 0 {
            o.push(0);
        }
        o
    };
    let latin1 = b"caf\xe9 \xff\xfe";
    // SHB with an opt_comment (1) and a shb_hardware (2) in Latin-1
    let mut shb = Vec::new();
    shb.extend(ng.u32(0x1A2B_3C4D));
    shb.extend(ng.u16(1));
    shb.extend(ng.u16(0));
    shb.extend([0xFF; 8]);
    shb.extend(opt(&ng, 1, latin1));
    shb.extend(opt(&ng, 2, latin1));
    shb.extend(opt(&ng, 0, b""));
    ng.block(0x0A0D_0D0A, shb);
    // IDB with an if_name (2) in Latin-1 and if_tsresol 9 after it
    let mut idb = Vec::new();
    idb.extend(ng.u16(1));
    idb.extend(ng.u16(0));
    idb.extend(ng.u32(0));
    idb.extend(opt(&ng, 2, latin1));
    idb.extend(opt(&ng, 9, &[9]));
    idb.extend(opt(&ng, 0, b""));
    ng.block(1, idb);
    let frame = frame_bytes(7, 60);
    ng.epb(0, 1_700_000_000_123_456_789, &frame, 60);
    let (frames, err) = read_all(reader_from("latin1.pcapng", ng.bytes()).unwrap());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].data, frame);
    // if_tsresol after the Latin-1 option was still read: nanosecond ticks
    assert_eq!(frames[0].time_ns, 1_700_000_000_123_456_789);
}
