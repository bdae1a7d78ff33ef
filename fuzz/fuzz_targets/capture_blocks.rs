//! Structure-aware capture files (issue 15): valid pcap and pcapng skeletons whose record and
//! block lengths, option lengths, interface ids, timestamp resolutions (`if_tsresol`) and
//! link types are hostile, carrying Ethernet frames, ERF records (with extension headers and
//! lying `rlen`/`wlen`) or any bytes; each frame then dissected as `dissect -f jsonl` does.
//!
//! Invariants: no panic; the reader ends, and nothing after its error; a frame never holds more
//! bytes than the input; every JSON line parses; a file whose every length is true and whose
//! packets name existing interfaces gives back exactly the frames written, in order, with their
//! link types.
#![no_main]

use std::io::Cursor;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope::capture::CaptureReader;
use rocescope::dissect::json::{self, TimeDigits};
use rocescope::frame::FrameView;
use rocescope_dissectors::stack::DissectOptions;

/// A length field: the true one, off by a little, or anything at all.
#[derive(Debug, Arbitrary, Clone, Copy)]
enum Length {
    True,
    Off(i8),
    Any(u32),
}

impl Length {
    fn of(self, real: usize) -> u32 {
        let real = u32::try_from(real).unwrap_or(u32::MAX);
        match self {
            Length::True => real,
            Length::Off(d) => real.wrapping_add_signed(i32::from(d)),
            Length::Any(v) => v,
        }
    }
    fn honest(self) -> bool {
        matches!(self, Length::True) || matches!(self, Length::Off(0))
    }
}

#[derive(Debug, Arbitrary, Clone, Copy)]
enum Link {
    Ethernet,
    Erf,
    Infiniband,
    Raw,
    Sll,
    Any(u16),
}

impl Link {
    fn code(self) -> u32 {
        match self {
            Link::Ethernet => 1,
            Link::Erf => 197,
            Link::Infiniband => 247,
            Link::Raw => 101,
            Link::Sll => 113,
            Link::Any(v) => u32::from(v),
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Payload {
    Bytes(Vec<u8>),
    /// An ERF record: type, flags, extension headers (the chain bit set on all but the last
    /// unless `cut_chain`), rlen and wlen, then the body.
    Erf {
        rtype: u8,
        flags: u8,
        ext: Vec<[u8; 8]>,
        cut_chain: bool,
        rlen: Length,
        wlen: u16,
        body: Vec<u8>,
    },
}

impl Payload {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Payload::Bytes(b) => b.clone(),
            Payload::Erf {
                rtype,
                flags,
                ext,
                cut_chain,
                rlen,
                wlen,
                body,
            } => {
                let ext = &ext[..ext.len().min(8)];
                let mut out = vec![0u8; 16];
                out[0..8].copy_from_slice(&0x0123_4567_89ab_cdefu64.to_le_bytes());
                let chained = !ext.is_empty();
                out[8] = (rtype & 0x7f) | if chained { 0x80 } else { 0 };
                out[9] = *flags;
                for (i, e) in ext.iter().enumerate() {
                    let mut e = *e;
                    let last = i + 1 == ext.len();
                    e[0] = if last || *cut_chain {
                        e[0] & 0x7f
                    } else {
                        e[0] | 0x80
                    };
                    out.extend_from_slice(&e);
                }
                out.extend_from_slice(body);
                let r = rlen.of(out.len()) as u16;
                out[10..12].copy_from_slice(&r.to_be_bytes());
                out[14..16].copy_from_slice(&wlen.to_be_bytes());
                out
            }
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Opt {
    code: u16,
    len: Length,
    value: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
enum IdbOpt {
    TsResol(u8),
    TsOffset(u64),
    Other(Opt),
}

#[derive(Debug, Arbitrary)]
enum Block {
    Section {
        major: u16,
        section_len: u64,
        options: Vec<Opt>,
    },
    Interface {
        link: Link,
        snaplen: u32,
        options: Vec<IdbOpt>,
    },
    Enhanced {
        /// An index among the section's interfaces, or any number.
        iface: u32,
        any_iface: bool,
        ts: u64,
        caplen: Length,
        orig_len: u32,
        data: Payload,
        options: Vec<Opt>,
    },
    Simple {
        orig_len: Length,
        data: Vec<u8>,
    },
    Obsolete {
        iface: u16,
        ts: u64,
        caplen: Length,
        data: Vec<u8>,
    },
    Other {
        code: u32,
        body: Vec<u8>,
    },
}

#[derive(Debug, Arbitrary)]
struct NgBlock {
    block: Block,
    total_len: Length,
    trailer_differs: bool,
}

#[derive(Debug, Arbitrary)]
struct Record {
    secs: u32,
    frac: u32,
    caplen: Length,
    orig_len: u32,
    data: Payload,
}

#[derive(Debug, Arbitrary)]
enum File {
    Pcap {
        big_endian: bool,
        nanos: bool,
        version: (u16, u16),
        snaplen: u32,
        link: Link,
        records: Vec<Record>,
        trailing: Vec<u8>,
    },
    PcapNg {
        big_endian: bool,
        blocks: Vec<NgBlock>,
    },
}

struct Out {
    big: bool,
    bytes: Vec<u8>,
}

impl Out {
    fn u16(&mut self, v: u16) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend_from_slice(&b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend_from_slice(&b);
    }
    fn pad4(&mut self) {
        while self.bytes.len() % 4 != 0 {
            self.bytes.push(0);
        }
    }
    fn options(&mut self, opts: &[Opt]) -> bool {
        let mut honest = true;
        for o in opts.iter().take(8) {
            let code = if o.code == 0 { 1 } else { o.code }; // 0 ends the list
            self.u16(code);
            self.u16(o.len.of(o.value.len()) as u16);
            self.bytes.extend_from_slice(&o.value);
            self.pad4();
            honest &= o.len.honest() && o.value.len() <= usize::from(u16::MAX);
        }
        if !opts.is_empty() {
            self.u16(0);
            self.u16(0);
        }
        honest
    }
}

/// What an honest file must give back: (link type, bytes) per frame.
type Expected = Option<Vec<(u32, Vec<u8>)>>;

fn build(file: &File) -> (Vec<u8>, Expected) {
    match file {
        File::Pcap {
            big_endian,
            nanos,
            version,
            snaplen,
            link,
            records,
            trailing,
        } => {
            let mut o = Out {
                big: *big_endian,
                bytes: Vec::new(),
            };
            o.u32(if *nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
            o.u16(version.0);
            o.u16(version.1);
            o.u32(0);
            o.u32(0);
            o.u32(*snaplen);
            o.u32(link.code());
            let mut expected = Some(Vec::new());
            for r in records.iter().take(32) {
                let data = r.data.bytes();
                o.u32(r.secs);
                o.u32(r.frac);
                o.u32(r.caplen.of(data.len()));
                o.u32(r.orig_len);
                o.bytes.extend_from_slice(&data);
                let ok = r.caplen.honest()
                    && (*nanos && r.frac < 1_000_000_000 || !*nanos && r.frac < 1_000_000);
                match (&mut expected, ok) {
                    (Some(e), true) => e.push((link.code(), data)),
                    _ => expected = None,
                }
            }
            if !trailing.is_empty() {
                expected = None;
                o.bytes.extend_from_slice(trailing);
            }
            (o.bytes, expected)
        }
        File::PcapNg { big_endian, blocks } => {
            let mut o = Out {
                big: *big_endian,
                bytes: Vec::new(),
            };
            let mut expected = Some(Vec::new());
            let mut links: Vec<u32> = Vec::new();
            let mut started = false;
            for nb in blocks.iter().take(32) {
                let start = o.bytes.len();
                let mut honest = nb.total_len.honest() && !nb.trailer_differs;
                let mut frame = None;
                let code = match &nb.block {
                    Block::Section { .. } => 0x0A0D_0D0A,
                    Block::Interface { .. } => 1,
                    Block::Enhanced { .. } => 6,
                    Block::Simple { .. } => 3,
                    Block::Obsolete { .. } => 2,
                    Block::Other { code, .. } => {
                        if matches!(code, 1 | 2 | 3 | 5 | 6 | 0x0A0D_0D0A) {
                            0x0BAD
                        } else {
                            *code
                        }
                    }
                };
                o.u32(code);
                o.u32(0); // total length, patched below
                match &nb.block {
                    Block::Section {
                        major,
                        section_len,
                        options,
                    } => {
                        o.u32(0x1A2B_3C4D);
                        o.u16(*major);
                        o.u16(0);
                        let b = if o.big {
                            section_len.to_be_bytes()
                        } else {
                            section_len.to_le_bytes()
                        };
                        o.bytes.extend_from_slice(&b);
                        honest &= o.options(options) && *major == 1;
                        links.clear();
                        started = true;
                    }
                    Block::Interface {
                        link,
                        snaplen,
                        options,
                    } => {
                        o.u16(link.code() as u16);
                        o.u16(0);
                        o.u32(*snaplen);
                        let mut plain = Vec::new();
                        for opt in options.iter().take(6) {
                            match opt {
                                IdbOpt::TsResol(r) => {
                                    honest &= *r == 6 || *r == 9;
                                    plain.push(Opt {
                                        code: 9,
                                        len: Length::True,
                                        value: vec![*r],
                                    });
                                }
                                IdbOpt::TsOffset(v) => {
                                    honest &= *v == 0;
                                    let b = if o.big {
                                        v.to_be_bytes()
                                    } else {
                                        v.to_le_bytes()
                                    };
                                    plain.push(Opt {
                                        code: 14,
                                        len: Length::True,
                                        value: b.to_vec(),
                                    });
                                }
                                IdbOpt::Other(x) => {
                                    honest &= x.code != 9 && x.code != 14;
                                    plain.push(Opt {
                                        code: x.code,
                                        len: x.len,
                                        value: x.value.clone(),
                                    });
                                }
                            }
                        }
                        honest &= o.options(&plain) && link.code() < 0x1_0000 && *snaplen == 0;
                        links.push(link.code());
                    }
                    Block::Enhanced {
                        iface,
                        any_iface,
                        ts,
                        caplen,
                        orig_len,
                        data,
                        options,
                    } => {
                        let id = if *any_iface || links.is_empty() {
                            *iface
                        } else {
                            *iface % links.len() as u32
                        };
                        let data = data.bytes();
                        o.u32(id);
                        o.u32((ts >> 32) as u32);
                        o.u32(*ts as u32);
                        o.u32(caplen.of(data.len()));
                        o.u32(*orig_len);
                        o.bytes.extend_from_slice(&data);
                        o.pad4();
                        honest &= o.options(options) && caplen.honest();
                        match links.get(id as usize) {
                            Some(&l) => frame = Some((l, data)),
                            None => honest = false,
                        }
                    }
                    Block::Simple { orig_len, data } => {
                        o.u32(orig_len.of(data.len()));
                        o.bytes.extend_from_slice(data);
                        o.pad4();
                        honest = false; // its captured length depends on the snaplen
                    }
                    Block::Obsolete {
                        iface,
                        ts,
                        caplen,
                        data,
                    } => {
                        o.u16(*iface);
                        o.u16(0);
                        o.u32((ts >> 32) as u32);
                        o.u32(*ts as u32);
                        o.u32(caplen.of(data.len()));
                        o.u32(data.len() as u32);
                        o.bytes.extend_from_slice(data);
                        o.pad4();
                        honest = false;
                    }
                    Block::Other { body, .. } => {
                        o.bytes.extend_from_slice(body);
                        o.pad4();
                    }
                }
                let total = o.bytes.len() - start + 4;
                let claimed = nb.total_len.of(total);
                let trailer = if nb.trailer_differs {
                    claimed.wrapping_add(4)
                } else {
                    claimed
                };
                o.u32(trailer);
                let b = if o.big {
                    claimed.to_be_bytes()
                } else {
                    claimed.to_le_bytes()
                };
                o.bytes[start + 4..start + 8].copy_from_slice(&b);
                honest &= started;
                match (&mut expected, honest) {
                    (Some(e), true) => e.extend(frame),
                    _ => expected = None,
                }
            }
            if blocks.is_empty() {
                expected = None;
            }
            (o.bytes, expected)
        }
    }
}

fuzz_target!(|file: File| {
    let (bytes, expected) = build(&file);
    let len = bytes.len();
    let mut got = Vec::new();
    let options = DissectOptions::default();
    let (mut line, mut time) = (Vec::new(), TimeDigits::default());
    let mut failed = None;
    match CaptureReader::from_reader("fuzz.pcapng", Cursor::new(bytes)) {
        Err(e) => failed = Some(e.to_string()),
        Ok(mut reader) => {
            while let Some(item) = reader.next_frame() {
                match item {
                    Ok(frame) => {
                        assert!(frame.data.len() <= len);
                        let view = FrameView::new(&frame, &options, 0);
                        line.clear();
                        json::write_frame(&mut line, &view, &mut time);
                        let text = line.strip_suffix(b"\n").unwrap_or(&line);
                        if let Err(e) = serde_json::from_slice::<serde_json::Value>(text) {
                            panic!("invalid JSON line ({e}): {}", String::from_utf8_lossy(text));
                        }
                        got.push((frame.link.0, frame.data.to_vec()));
                    }
                    Err(e) => {
                        failed = Some(e.to_string());
                        assert!(reader.next_frame().is_none(), "nothing after an error");
                        break;
                    }
                }
            }
        }
    }
    if let Some(expected) = expected {
        assert_eq!(failed, None, "an honest file fails");
        assert_eq!(got, expected, "an honest file gives other frames");
    }
});
