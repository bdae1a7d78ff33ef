//! The TCP option walker on any bytes: it never panics, every step consumes
//! at least one byte, its only error is `Malformed { OptionLength }` at an
//! offset inside the area, and what `Options::parse` accepts emits into bytes
//! that parse back to the same `Options`. The `tcp_bth` view on whatever the
//! walker finds never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::tcp::{self, OptionIter, TcpOption};
use rocescope_dissectors::tcp_bth::{self, IcrcAlgorithm};
use rocescope_dissectors::{Malformed, WireError};

fuzz_target!(|data: &[u8]| {
    // the first two bytes pick the ExID, the rest is the option area (up to 40 bytes, or more)
    let (exid, area) = match data {
        [a, b, rest @ ..] => (u16::from_be_bytes([*a, *b]), rest),
        _ => (tcp_bth::TCP_BTH_EXID_DEFAULT, data),
    };
    let mut steps = 0usize;
    let mut it = OptionIter::new(area);
    let mut last_remaining = it.remaining();
    while let Some(opt) = it.next() {
        steps += 1;
        assert!(it.remaining() < last_remaining || it.remaining() == 0);
        last_remaining = it.remaining();
        match opt {
            Err(e) => {
                assert!(matches!(
                    e,
                    WireError::Malformed {
                        reason: Malformed::OptionLength { .. },
                        ..
                    }
                ));
                assert!(e.offset() >= tcp::HEADER_LEN && e.offset() < tcp::HEADER_LEN + area.len());
            }
            Ok(TcpOption::Experimental { option, .. }) => {
                let h = tcp_bth::Header::new_unchecked(option);
                let _ = (
                    h.to_string(),
                    h.mbo(),
                    h.verify_icrc(area, IcrcAlgorithm::Crc32Ieee),
                );
                if h.check_len().is_ok() {
                    let _ = tcp_bth::Repr::parse(&h);
                }
            }
            Ok(TcpOption::Sack(blocks)) => {
                assert_eq!(blocks.iter().count(), blocks.len());
            }
            Ok(_) => {}
        }
    }
    assert!(steps <= area.len());
    if let Some((at, option)) = tcp::find_tcp_bth(area, exid) {
        assert!(at >= tcp::HEADER_LEN);
        assert_eq!(
            &area[at - tcp::HEADER_LEN..at - tcp::HEADER_LEN + option.len()],
            option
        );
    }
    if let Ok(opts) = tcp::Options::parse(area, exid) {
        let len = opts.len();
        assert_eq!(len % 4, 0);
        let mut out = vec![0xEEu8; len];
        opts.emit(&mut out);
        assert_eq!(tcp::Options::parse(&out, exid), Ok(opts));
    }
});
